// Package hostnode is the rig's host node: a virtual kubelet (on the
// virtual-kubelet node library, as sluice-vk) that runs the pods bound to
// it — the shadows of offloaded pods — as processes of the rig host, which
// has no kubelet or container runtime.
//
// Each container runs the host binary its image is mapped to
// (Options.Images), started through an init helper (InitMain: the node's
// own binary, re-run) in a private mount namespace where the pod's volumes
// and its /etc/hosts are bound at their paths. Init containers run in
// order, then the containers, restarted per the pod's restartPolicy; their
// states, restart counts and the pod's phase and conditions reach the API
// server through the pod controller, and their output is served as logs
// by the node's kubelet API.
//
// Each pod gets an address of 127.80.0.0/16 as its pod IP. A userspace
// proxy stands in for kube-proxy: a Service of ClusterIP 10.96.A.B is
// served on 127.96.A.B (ServiceAddr), forwarding to the ready host-node
// pods it selects, or to the backend given for it (Options.Backends), and
// the /etc/hosts of each process maps Service names to those addresses.
//
// It is test infrastructure; LIMITS.md lists what it does not do.
package hostnode
