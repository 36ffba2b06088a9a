package provider

import (
	"context"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/internal/shadow"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// shadowChecks bounds the shadow reads in flight.
const shadowChecks = 8

// shadowLoop reads, once per PollInterval until ctx ends, the shadow of
// every pod whose job runs: the state of its tunnels and the status of its
// kept containers.
func (p *Provider) shadowLoop(ctx context.Context) {
	tick := time.NewTicker(p.cfg.PollInterval)
	defer tick.Stop()
	var lastErr string
	for {
		err := p.checkShadows(ctx)
		switch {
		case err != nil && err.Error() != lastErr:
			p.log.Warn("provider: shadows not read", "error", err)
			lastErr = err.Error()
		case err == nil:
			lastErr = ""
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// checkShadows makes one round: the shadow pods of the node are listed
// once, and for each pod with a running job its kept containers' status is
// taken, its readiness written onto its shadow pod and its tunnels are
// read; a pod whose job does not run (pending, requeued, ended) has its
// shadow pod's readiness gate closed, once.
func (p *Provider) checkShadows(ctx context.Context) error {
	type check struct {
		st      *podState
		running bool
		key     shadow.PodKey // where its shadow was made
	}
	var checks []check
	p.mu.Lock()
	for _, st := range p.pods {
		if st.shadowOf == nil || !st.submitted || st.deleting {
			continue
		}
		running := !st.final && st.last.BatchHost != ""
		if running || st.gate != corev1.ConditionFalse {
			key := shadow.PodKey{Namespace: shadow.Namespace(st.shadowOf, p.cfg.TenantNamespace), PodUID: st.ref.UID}
			checks = append(checks, check{st, running, key})
		}
	}
	p.mu.Unlock()
	if len(checks) == 0 {
		return nil
	}
	shadows, err := p.cfg.Shadows.ShadowPods(ctx)
	if err != nil {
		return err
	}
	sem := make(chan struct{}, shadowChecks)
	var wg sync.WaitGroup
	for _, c := range checks {
		st, sp := c.st, shadows[c.key]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if !c.running {
				p.gateShadow(ctx, st, sp)
				return
			}
			p.followShadowIP(st, sp)
			p.applyKept(st, sp)
			p.gateShadow(ctx, st, sp)
			snaps, err := p.cfg.Shadows.TunnelStatus(ctx, sp)
			if err != nil {
				p.log.Debug("provider: tunnel state not read", "pod", keyOf(st.pod), "error", err)
				return
			}
			p.applyTunnels(st, sp, snaps)
		})
	}
	wg.Wait()
	return nil
}

// followShadowIP gives the pod the IP of its running shadow pod sp (nil if
// none), the new one's once the Deployment has replaced it: Services
// selecting the pod reach the job there (shadow.PodIP). Without a running
// shadow pod the pod keeps the address it has.
func (p *Provider) followShadowIP(st *podState, sp *corev1.Pod) {
	if ip := shadow.ServedIP(sp); ip != "" {
		p.setPodIP(st, ip)
	}
}

// gateShadow writes the pod's Ready onto its shadow pod sp (nil if none),
// the condition of the shadow pod's readiness gate, when it differs: the
// shadow Service then sends connections only while the pod is Ready. A
// shadow pod without the condition is not ready, as one without a pod.
func (p *Provider) gateShadow(ctx context.Context, st *podState, sp *corev1.Pod) {
	p.mu.Lock()
	ready := false
	for _, c := range st.pod.Status.Conditions {
		ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
	}
	key := keyOf(st.pod)
	p.mu.Unlock()
	open := false
	if sp != nil && sp.DeletionTimestamp == nil {
		open = shadow.OffloadedReady(sp) == corev1.ConditionTrue
		if open != ready {
			if err := p.cfg.Shadows.SetOffloadedReady(ctx, sp, ready, p.cfg.Now()); err != nil {
				p.log.Warn("provider: the shadow's readiness not written", "pod", key, "error", err)
				return
			}
			open = ready
		}
	}
	p.mu.Lock()
	st.gate = corev1.ConditionFalse
	if open {
		st.gate = corev1.ConditionTrue
	}
	p.mu.Unlock()
}

// applyKept gives the pod the status its kept containers have in sp, its
// shadow pod (nil if none), as they run there rather than in the job.
func (p *Provider) applyKept(st *podState, sp *corev1.Pod) {
	p.mu.Lock()
	kept := shadow.KeptContainers(st.pod)
	if len(kept) == 0 || st.final || st.deleting {
		p.mu.Unlock()
		return
	}
	live := map[string]corev1.ContainerStatus{}
	if sp != nil {
		for _, cs := range sp.Status.ContainerStatuses {
			live[cs.Name] = cs
		}
	}
	if st.kept == nil {
		st.kept = map[string]corev1.ContainerStatus{}
	}
	for _, c := range kept {
		cs, ok := live[c.Name]
		if !ok {
			cs = corev1.ContainerStatus{Name: c.Name, Image: c.Image, State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: "ShadowPodPending", Message: "runs in the shadow, which has not started it"},
			}}
		}
		st.kept[c.Name] = cs
	}
	old := st.pod.Status
	st.pod.Status = jobStatus(st.pod, old, st.last, st.kept, p.cfg.Now())
	if st.tunnelCond != nil {
		setCondition(&st.pod.Status.Conditions, *st.tunnelCond)
	}
	changed := !equality.Semantic.DeepEqual(old, st.pod.Status)
	p.mu.Unlock()
	if changed {
		p.push(st)
	}
}
