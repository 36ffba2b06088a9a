package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// Shadows is the cluster side of an offloaded pod (S3); *shadow.Manager
// implements it.
type Shadows interface {
	Ensure(ctx context.Context, pod *corev1.Pod) (*shadow.Ref, error)
	SetNode(ctx context.Context, pod *corev1.Pod, node, job, socketDir string) error
	PodIP(ctx context.Context, pod *corev1.Pod) (string, error)
	ShadowPod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
	Delete(ctx context.Context, pod *corev1.Pod) error
	CleanOrphans(ctx context.Context, live func(uid string) bool) (int, error)
	ShadowPods(ctx context.Context) (map[shadow.PodKey]*corev1.Pod, error)
	TunnelStatus(ctx context.Context, shadowPod *corev1.Pod) ([]tunnel.Snapshot, error)
	SetOffloadedReady(ctx context.Context, shadowPod *corev1.Pod, ready bool, now time.Time) error
}

var _ Shadows = (*shadow.Manager)(nil)

// Reasons a submission waits for the shadow.
const (
	reasonShadowError    = "ShadowError"
	reasonKeptInitWaits  = "WaitingForKeptInitContainers"
	reasonRelayNotPlaced = "RelayNotPlaced"
	// reasonShadowNamespaceNotTrusted: the shadow namespace exists and
	// sluice did not create it (shadow.ErrNamespaceNotTrusted); the pod
	// waits for an operator to delete it or trust it.
	reasonShadowNamespaceNotTrusted = "ShadowNamespaceNotTrusted"
)

// prepareShadow makes the pod's shadow when it needs one, gives the pod the
// shadow's address, and waits until the kept init containers have
// completed. It returns the pod as the job sees it (kept containers
// removed), or a refusal, or an error to wait on.
func (p *Provider) prepareShadow(ctx context.Context, st *podState, pod *corev1.Pod) (*corev1.Pod, *refusal, error) {
	if p.cfg.Shadows == nil {
		return pod, nil, nil
	}
	if err := p.dropMovedShadow(ctx, st, pod); err != nil {
		return nil, nil, &waitError{reason: reasonShadowError, err: err}
	}
	if !shadow.Wanted(pod) {
		return pod, nil, nil
	}
	ref, err := p.cfg.Shadows.Ensure(ctx, pod)
	var perr *jobscript.PodError
	var aref *annotations.Refusal
	switch {
	case errors.As(err, &perr):
		return nil, podRefusal(perr), nil
	case errors.As(err, &aref):
		return nil, &refusal{reason: string(aref.Reason), field: "metadata.annotations[" + aref.Annotation + "]", rule: ruleOf(aref)}, nil
	case errors.Is(err, shadow.ErrNamespaceNotTrusted):
		// Not a refusal: once the operator deleted or trusted the
		// namespace, the next attempt goes on.
		return nil, nil, &waitError{reason: reasonShadowNamespaceNotTrusted, err: err}
	case err != nil:
		return nil, nil, &waitError{reason: reasonShadowError, err: err} // the shadow package names itself
	}
	if ref != nil {
		p.shadowMade(st, pod, ref)
	}
	if ip, err := p.cfg.Shadows.PodIP(ctx, pod); err == nil && ip != "" {
		p.setPodIP(st, ip)
	}
	if len(shadow.KeptInit(pod)) > 0 {
		sp, err := p.cfg.Shadows.ShadowPod(ctx, pod)
		if err != nil {
			return nil, nil, &waitError{reason: reasonShadowError, err: fmt.Errorf("shadow pod: %w", err)}
		}
		done := false
		if sp != nil {
			if done, err = shadow.KeptInitDone(sp); err != nil {
				return nil, &refusal{reason: ReasonRefused, field: "metadata.annotations[interlink.eu/disable-offload-init-containers]", rule: err.Error()}, nil
			}
		}
		if !done {
			return nil, nil, &waitError{reason: reasonKeptInitWaits, err: errors.New("the kept init containers run in the shadow first")}
		}
		kept := map[string]corev1.ContainerStatus{}
		for _, cs := range sp.Status.InitContainerStatuses {
			if isKeptInit(pod, cs.Name) {
				kept[cs.Name] = cs
			}
		}
		p.mu.Lock()
		st.kept = kept
		p.mu.Unlock()
	}
	return shadow.Offloaded(pod), nil, nil
}

// shadowMade records that ref, the shadow of pod as this attempt sees it,
// exists, and tells it in Events: once for a new shadow, and once for each
// SOCKS port it opens to every user of the job's node.
func (p *Provider) shadowMade(st *podState, pod *corev1.Pod, ref *shadow.Ref) {
	socks := 0
	if r, err := annotations.Parse(pod.Annotations, pod.Namespace); err == nil && r != nil {
		socks = r.SocksPort
	}
	p.mu.Lock()
	first := st.shadowOf == nil
	st.shadowOf = pod.DeepCopy()
	tellSocks := socks != 0 && socks != st.socksTold
	st.socksTold = socks
	p.mu.Unlock()
	if first {
		p.event(pod, corev1.EventTypeNormal, EventShadowCreated, "shadow %s/%s ready for the tunnel (forward %t, reverse %t)", ref.Namespace, ref.Name, ref.Forward, ref.Reverse)
	}
	if tellSocks {
		p.event(pod, corev1.EventTypeWarning, EventReverseSocksProxy,
			"SOCKS5 proxy on 127.0.0.1:%d of the job's node: every user of that node can reach the cluster through it, not only this job", socks)
		p.log.Warn("provider: pod asks for a SOCKS5 proxy open to every user of its node", "pod", keyOf(pod), "port", socks)
	}
}

// dropMovedShadow deletes the shadow an earlier attempt made when pod, as
// this attempt sees it, wants none or wants it in another namespace (its
// annotations changed meanwhile): deleted where it is, through the pod it
// was made for, so that none is left behind with the site's credentials.
func (p *Provider) dropMovedShadow(ctx context.Context, st *podState, pod *corev1.Pod) error {
	p.mu.Lock()
	prev := st.shadowOf
	p.mu.Unlock()
	tenant := p.cfg.TenantNamespace
	if prev == nil || shadow.Wanted(pod) && shadow.Namespace(prev, tenant) == shadow.Namespace(pod, tenant) {
		return nil
	}
	if err := p.cfg.Shadows.Delete(ctx, prev); err != nil {
		return err // the shadow package names itself
	}
	p.mu.Lock()
	st.shadowOf = nil
	p.mu.Unlock()
	p.log.Info("provider: shadow deleted: the pod's annotations no longer want it there", "pod", keyOf(pod), "namespace", shadow.Namespace(prev, tenant))
	return nil
}

// setPodIP gives the pod the shadow's address (S3) and pushes it.
func (p *Provider) setPodIP(st *podState, ip string) {
	p.mu.Lock()
	if st.final || st.deleting {
		p.mu.Unlock()
		return
	}
	changed := st.pod.Status.PodIP != ip
	st.pod.Status.PodIP = ip
	st.pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	p.mu.Unlock()
	if changed {
		p.push(st)
	}
}

// relaySide gives job, made from pod, what the relay does for it: the job
// side of its tunnels (reverseJob) and, for its probes and hooks on the
// node's loopback, the relay binary that checks them (jobscript.Job.Relay).
func (p *Provider) relaySide(ctx context.Context, pod *corev1.Pod, job *jobscript.Job) error {
	var err error
	if job.Reverse, err = p.reverseJob(ctx, pod); err != nil {
		return err
	}
	if job.ChecksOwners() {
		job.Relay, err = p.relayPath(ctx)
	}
	return err
}

// reverseJob is the job side of the pod's tunnels (its reverse forwards,
// its SOCKS proxy, the relay's forward entry for its forward tunnel), or
// nil for a job that has none. Whether the job runs the relay is
// shadow.RunsRelay's to say; the relay is placed on the site for it.
func (p *Provider) reverseJob(ctx context.Context, pod *corev1.Pod) (*jobscript.ReverseJob, error) {
	r, err := annotations.Parse(pod.Annotations, pod.Namespace)
	if err != nil {
		return nil, err
	}
	forward, _ := shadow.Needed(pod)
	relayed := shadow.RunsRelay(pod, p.cfg.Shadows != nil && p.cfg.SocketDirRoot != "")
	if !relayed {
		// A SOCKS proxy alone needs the socket directory, not the relay.
		return jobscript.NewReverseJob(r, false, p.cfg.SocketDirRoot, ""), nil
	}
	path, err := p.relayPath(ctx)
	if err != nil {
		return nil, err
	}
	return jobscript.NewReverseJob(r, forward, p.cfg.SocketDirRoot, path), nil
}

// relayPath places the relay binary on the site and returns its path
// there.
func (p *Provider) relayPath(ctx context.Context) (string, error) {
	if p.cfg.Relay == nil {
		return "", errors.New("no relay binary to place on the site")
	}
	path, err := p.cfg.Relay(ctx)
	if err != nil {
		return "", &waitError{reason: reasonRelayNotPlaced, err: fmt.Errorf("place the relay: %w", err)}
	}
	return path, nil
}

// followNode tells the shadow the node the job runs on (and the job's id,
// for the srun carrier, and the pod's socket directory, named from its
// salt), so that the tunnel follows a requeue. Each call
// supersedes the one before: its attempt, retried in the background, is
// cancelled, and the shadow's node is written by one attempt at a time, each
// checking first that its node is still the current one, so that a late
// retry for an old node never overwrites a newer one.
func (p *Provider) followNode(st *podState, node string) {
	p.mu.Lock()
	pod := st.shadowOf.DeepCopy() // the pod as its shadow was made
	job, socketDir := string(st.ref.JobID), st.socketDir
	if st.stopFollow != nil {
		st.stopFollow()
	}
	stopped, stop := context.WithCancel(context.Background())
	st.stopFollow = stop
	p.mu.Unlock()
	if pod == nil || p.cfg.Shadows == nil {
		return
	}
	p.background(func(ctx context.Context) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(stopped, cancel)()
		p.retry(ctx, "set the shadow's node", pod, func() error {
			st.setNode.Lock()
			defer st.setNode.Unlock()
			// stopped, not ctx: ctx follows it from another goroutine
			if stopped.Err() != nil || p.isDeleting(st) {
				return nil // superseded, or no longer wanted
			}
			if err := p.cfg.Shadows.SetNode(ctx, pod, node, job, socketDir); err != nil {
				return err
			}
			p.mu.Lock()
			st.nodeSetFor = job
			p.mu.Unlock()
			return nil
		})
	})
}

// cleanOrphans removes the shadows of pods no longer on the node.
func (p *Provider) cleanOrphans(ctx context.Context) {
	if p.cfg.Shadows == nil {
		return
	}
	list, err := p.cfg.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", p.cfg.NodeName).String(),
	})
	if err != nil {
		p.log.Warn("provider: orphan shadows not cleaned", "error", err)
		return
	}
	live := map[string]bool{}
	for _, pod := range list.Items {
		live[string(pod.UID)] = true
	}
	n, err := p.cfg.Shadows.CleanOrphans(ctx, func(uid string) bool { return live[uid] })
	if err != nil {
		p.log.Warn("provider: orphan shadows not cleaned", "error", err)
	}
	if n > 0 {
		p.log.Info("provider: orphan shadows removed", "objects", n)
	}
}

// isKeptInit reports whether name is a kept init container of pod.
func isKeptInit(pod *corev1.Pod, name string) bool {
	for _, c := range shadow.KeptInit(pod) {
		if c.Name == name {
			return true
		}
	}
	return false
}

// keptLogs streams the logs of a kept container from the shadow pod it runs
// in; ok is false when container is not kept.
func (p *Provider) keptLogs(ctx context.Context, pod *corev1.Pod, container string, opts *corev1.PodLogOptions) (rc io.ReadCloser, ok bool, err error) {
	if p.cfg.Shadows == nil {
		return nil, false, nil
	}
	kept := false
	for _, list := range [][]corev1.Container{shadow.KeptInit(pod), shadow.KeptContainers(pod)} {
		for _, c := range list {
			kept = kept || c.Name == container
		}
	}
	if !kept {
		return nil, false, nil
	}
	sp, err := p.cfg.Shadows.ShadowPod(ctx, pod)
	if err != nil {
		return nil, true, fmt.Errorf("shadow pod: %w", err)
	}
	if sp == nil {
		return nil, true, errdefs.NotFoundf("container %s of pod %s runs in its shadow, which has no pod yet", container, keyOf(pod))
	}
	o := opts.DeepCopy()
	o.Container = container
	rc, err = p.cfg.Client.CoreV1().Pods(sp.Namespace).GetLogs(sp.Name, o).Stream(ctx)
	if err != nil {
		return nil, true, fmt.Errorf("logs of kept container %s in shadow pod %s/%s: %w", container, sp.Namespace, sp.Name, err)
	}
	return rc, true, nil
}
