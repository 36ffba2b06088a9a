package provider

import (
	"context"
	"sync"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// podState is what the provider holds for one pod. Its fields are guarded
// by Provider.mu, except op.
type podState struct {
	// op is held by the one submission attempt or deletion working on the
	// pod, so that a deletion never races a submission into leaking a job.
	op sync.Mutex
	// setNode is held while the shadow's node is written (followNode).
	setNode sync.Mutex
	// stopFollow cancels the last followNode's attempt; nil if none.
	stopFollow context.CancelFunc

	// pod is the pod as the provider reports it: its spec as last seen, its
	// status as last computed.
	pod *corev1.Pod
	ref slurm.JobRef
	// containers are the job's init containers and containers as submitted,
	// for exec into them.
	containers []jobscript.Container
	// runtimeOptions are the job's own apptainer options, for exec.
	runtimeOptions []string
	// submitted: the job exists in Slurm (ref.JobID is set).
	submitted bool
	// socketDir is the pod's socket directory on the node, for its reverse
	// tunnel ("" for none), as Submit named it from the pod's salt; the
	// shadow learns it with the node (followNode).
	socketDir string
	// forwardEntry is the relay's forward entry on the node
	// (relay.ForwardSocket in socketDir) when the job runs a relay (it has
	// reverse forwards); "" for none.
	forwardEntry string
	// final: the pod reached a terminal phase; its job is not polled again.
	final bool
	// deleting: a deletion started; nothing is submitted any more.
	deleting bool
	// finalizer: the job finalizer is on the pod (set by the provider, or
	// found there), until the deletion takes it off.
	finalizer bool
	// last is the job status last seen, to tell transitions apart.
	last slurm.Status
	// kept are the statuses of the kept init containers, from the shadow
	// pod once they completed.
	kept map[string]corev1.ContainerStatus
	// shadowOf is the pod as it was when its shadow (S3) was last made or
	// brought up to date, nil while it has none. Where the shadow is
	// follows from its annotations: the shadow is told of its node, moved
	// and deleted through shadowOf, whatever the pod says now.
	shadowOf *corev1.Pod
	// submittedWith are the annotations under interLink's prefixes that the job
	// was checked and submitted with, nil before; they are kept in pod
	// whatever later updates say (UpdatePod). changeTold names the
	// annotations whose change was last told in an Event.
	submittedWith map[string]string
	changeTold    string
	// adoptable: the pod came with the job finalizer (the virtual kubelet
	// restarted), so its job may have been submitted before: the first
	// attempt takes the annotations it was submitted with (recoverFrozen,
	// which sets recovered), and a refusal cancels it (refuse).
	adoptable, recovered bool
	// wake asks a waiting submission to try again now: the annotations it
	// checks changed.
	wake chan struct{}
	// socksTold is the SOCKS port last told in a ReverseSocksProxy Event.
	socksTold int
	// tunnels are the states of the shadow's tunnels last seen, by mode;
	// tunnelCond is the TunnelReady condition they gave, kept across the
	// status the job gives the pod.
	tunnels    map[string]*tunnelSeen
	tunnelCond *corev1.PodCondition
	// gate is the shadow pod's readiness gate (shadow.ConditionOffloadedReady)
	// as last seen or written; "" before the first look.
	gate corev1.ConditionStatus
	// renew is the pod's walltime renewal (renew.go), nil while it asks
	// for none or its job has not run yet.
	renew *renewal
	// nodeSetFor is the job whose node the shadow was last told of.
	nodeSetFor string
	// waitMsg is the last reason a submission waits for, to record an
	// Event once per new reason.
	waitMsg string
}

func podKey(namespace, name string) string { return namespace + "/" + name }

func keyOf(pod *corev1.Pod) string {
	k, err := cache.MetaNamespaceKeyFunc(pod)
	if err != nil {
		return podKey(pod.Namespace, pod.Name)
	}
	return k
}

// lookup returns the state of a pod, or nil.
func (p *Provider) lookup(namespace, name string) *podState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pods[podKey(namespace, name)]
}

// forget drops the state of a pod, if it is still st.
func (p *Provider) forget(st *podState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := keyOf(st.pod)
	if p.pods[k] == st {
		delete(p.pods, k)
	}
}
