package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	corev1 "k8s.io/api/core/v1"
)

// nodeWriteTimeout bounds the wait for the shadow to be told of the
// successor's node before the old job is cancelled all the same.
const nodeWriteTimeout = time.Minute

// handOver makes the ready successor the pod's current job: the pod's
// status follows it, the shadow's tunnels are sent to its node and socket
// directory (as after a requeue), and once the forward tunnel says it
// serves the successor (awaitTunnels), the old job is sent SIGTERM with the
// pod's grace period and cancelled.
// Connections open on the old job last until it ends.
func (p *Provider) handOver(ctx context.Context, st *podState, succ *successor) {
	now := p.cfg.Now()
	p.mu.Lock()
	r := st.renew
	if st.deleting || st.final || r.succ != succ {
		p.mu.Unlock()
		return // the deletion cancels both jobs
	}
	old, late, stale := st.ref, r.late, r.prev
	st.ref, st.socketDir, st.forwardEntry = succ.ref, succ.socketDir, succ.forwardEntry
	st.containers, st.runtimeOptions = succ.containers, succ.runtimeOptions
	r.prev, r.gen, r.succ, r.failures, r.late, r.impossible = &old, succ.gen, nil, 0, false, false
	js := succ.last
	st.last = js
	st.pod.Status = jobStatus(st.pod, st.pod.Status, js, st.kept, now)
	if st.tunnelCond != nil {
		setCondition(&st.pod.Status.Conditions, *st.tunnelCond)
	}
	setCondition(&st.pod.Status.Conditions, currentJobCondition(st, now))
	pod := st.pod.DeepCopy()
	shadowed := st.shadowOf != nil && p.cfg.Shadows != nil
	p.mu.Unlock()

	p.event(pod, corev1.EventTypeNormal, EventSuccessorReady, "successor Slurm job %s (renewal %d) ready on node %s: it serves the pod now", js.JobID, succ.gen, js.BatchHost)
	p.log.Info("provider: successor ready", "pod", keyOf(pod), "job", js.JobID, "renewal", succ.gen, "node", js.BatchHost, "old", old.JobID)
	p.push(st)
	if shadowed {
		p.followNode(st, js.BatchHost)
		p.awaitNode(ctx, st, string(js.JobID))
		p.awaitTunnels(ctx, st, js.BatchHost, succ.socketDir)
		if ctx.Err() != nil {
			return
		}
	}
	old.Grace = time.Duration(jobscript.PreStopGrace(pod))*time.Second + preStopSlack
	if !late {
		p.event(pod, corev1.EventTypeNormal, EventPreStop, "sending SIGTERM to Slurm job %s, handed over; cancelled after the grace period %s", old.JobID, old.Grace-preStopSlack)
	}
	if !p.retry(ctx, "cancel the job handed over from", pod, func() error { return p.cfg.Jobs.Cancel(ctx, old) }) {
		return
	}
	p.cfg.Jobs.EndLogs(old.UID)
	p.event(pod, corev1.EventTypeNormal, EventHandedOver, "handed over from Slurm job %s to Slurm job %s (renewal %d); Slurm job %s ended", old.JobID, js.JobID, succ.gen, old.JobID)
	p.log.Info("provider: handed over", "pod", keyOf(pod), "from", old.JobID, "to", js.JobID)
	if stale != nil {
		p.dropJob(ctx, pod, *stale) // the one before: --previous now reads old
	}
}

// awaitNode waits until the shadow was told of job's node (followNode), or
// nodeWriteTimeout passed.
func (p *Provider) awaitNode(ctx context.Context, st *podState, job string) {
	ctx, cancel := context.WithTimeout(ctx, nodeWriteTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		p.mu.Lock()
		done := st.nodeSetFor == job || st.deleting
		p.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ctx.Done():
			p.log.Warn("provider: the shadow was not told of the successor's node in time; the old job is cancelled all the same", "pod", keyOf(st.pod), "job", job)
			return
		case <-tick.C:
		}
	}
}

// awaitTunnels waits until the forward tunnel of st's shadow says it is up
// on node and, when it goes through the job's relay, reads the successor's
// socketDir: new connections then reach the successor. It gives up after
// HandoverTimeout, with a Warning, and the old job is ended all the same: its
// time limit would end it anyway. A shadow without a forward tunnel has
// nothing to wait for.
func (p *Provider) awaitTunnels(ctx context.Context, st *podState, node, socketDir string) {
	p.mu.Lock()
	pod := st.shadowOf.DeepCopy()
	p.mu.Unlock()
	if pod == nil {
		return
	}
	start := p.cfg.Now()
	ctx, cancel := context.WithTimeout(ctx, p.cfg.HandoverTimeout)
	defer cancel()
	tick := time.NewTicker(p.cfg.TunnelPoll)
	defer tick.Stop()
	last := "no shadow pod yet"
	for {
		if p.isDeleting(st) {
			return
		}
		moved, why := p.tunnelsMoved(ctx, pod, node, socketDir)
		if moved {
			p.log.Info("provider: the forward tunnel serves the successor", "pod", keyOf(pod), "node", node, "after", p.cfg.Now().Sub(start).Round(time.Millisecond))
			return
		}
		last = why
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				p.event(pod, corev1.EventTypeWarning, EventTunnelLate, "the forward tunnel did not move to the successor within %s (%s); the old job is ended all the same", p.cfg.HandoverTimeout, last)
			}
			return
		case <-tick.C:
		}
	}
}

// tunnelsMoved reports whether the forward tunnel of pod's shadow is up on
// node and, when it has an entry directory, reads socketDir; else it says
// what it is doing instead.
func (p *Provider) tunnelsMoved(ctx context.Context, pod *corev1.Pod, node, socketDir string) (bool, string) {
	sp, err := p.cfg.Shadows.ShadowPod(ctx, pod)
	if err != nil {
		return false, err.Error()
	}
	if sp == nil {
		return false, "no shadow pod"
	}
	entry, forward := shadow.ForwardEntry(sp)
	if !forward {
		return true, ""
	}
	snaps, err := p.cfg.Shadows.TunnelStatus(ctx, sp)
	if err != nil {
		return false, err.Error()
	}
	for _, s := range snaps {
		if s.Mode != tunnel.ModeForward {
			continue
		}
		switch {
		case s.State != tunnel.StateUp || s.Node != node:
			return false, fmt.Sprintf("forward %s on node %q", s.State, s.Node)
		case entry && s.EntryDir != socketDir:
			return false, fmt.Sprintf("forward entry %q", s.EntryDir)
		}
		return true, ""
	}
	return false, "forward tunnel not running"
}
