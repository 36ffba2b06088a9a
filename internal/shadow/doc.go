// Package shadow builds and keeps the shadow of an offloaded pod (SPEC S3):
// a Deployment running the tunnel containers (ssh-forward, S4; ssh-reverse,
// S5) and the containers the pod keeps in the cluster, a Service for the
// pod's TCP ports, and the ConfigMap `<name>-node` that tells the tunnels
// the compute node the job landed on.
//
// The builders (Name, Namespace, Needed, Spec.Build, KeptInit, Offloaded…)
// are pure. Manager does the API work: Ensure, SetNode, PodIP, ShadowPod,
// Delete and CleanOrphans. With Spec.TenantNamespace set it only ever
// touches that namespace, so that a confined node needs rights there only.
package shadow
