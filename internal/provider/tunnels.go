package provider

import (
	"fmt"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Events about the tunnels of a pod's shadow (S4, S5).
const (
	EventTunnelReady   = "TunnelReady"
	EventTunnelLost    = "TunnelLost"
	EventTunnelBack    = "TunnelBack"
	EventTunnelHostKey = "TunnelHostKeyRejected"
	// EventForwardRefused warns that the site refused connections to the
	// job for a reason its author is to be told of: another user holds the
	// job's port on the node, its port file is bad, forwarding is
	// prohibited.
	EventForwardRefused = "ForwardRefused"
)

// ConditionTunnelReady is the pod condition that tells whether the tunnels
// of the pod's shadow are up; `kubectl describe pod` shows it, and its
// reason and message say which tunnel is not and why.
const ConditionTunnelReady corev1.PodConditionType = "sluice.io/TunnelReady"

// tunnelSeen is what the provider last saw of one tunnel of a pod.
type tunnelSeen struct {
	state tunnel.State
	node  string
	ups   int
	lost  bool // it went down after being up: TunnelBack when it is up again
	// everUp: a tunnel of this mode was up once, in this process or an
	// earlier one; the next up is TunnelBack, not TunnelReady.
	everUp bool
	// instance is the tunnel's process: the shadow pod's UID and the
	// container's restart count (tunnelInstance). A new one starts over.
	instance string
	// refused is the tunnel's count of refusals to report
	// (tunnel.Snapshot.Refused) when they were last reported, at
	// reportedAt.
	refused    int
	reportedAt time.Time
}

// refusalEvery is the least time between two ForwardRefused Events of a
// tunnel: a squatter on the job's port refuses every connection, and the
// Events of an object are rate-limited together (client-go's spam filter),
// so that one per connection would crowd the pod's other Events out.
const refusalEvery = time.Minute

// tunnelInstance names the process that runs mode's tunnel in shadow pod
// sp: the pod's UID and the container's restarts. A pod the Deployment
// replaced, or a container the kubelet restarted, is a new instance.
func tunnelInstance(sp *corev1.Pod, mode string) string {
	if sp == nil {
		return ""
	}
	name := shadow.ContainerForward
	if mode == "reverse" {
		name = shadow.ContainerReverse
	}
	for _, cs := range sp.Status.ContainerStatuses {
		if cs.Name == name {
			return fmt.Sprintf("%s/%d", sp.UID, cs.RestartCount)
		}
	}
	return string(sp.UID)
}

// applyTunnels records the tunnels' states, as the tunnels of shadow pod sp
// (nil if none) report them: each change is told in an Event, and the
// TunnelReady condition follows.
func (p *Provider) applyTunnels(st *podState, sp *corev1.Pod, snaps []tunnel.Snapshot) {
	type event struct{ typ, reason, msg string }
	var events []event
	p.mu.Lock()
	if st.final || st.deleting {
		p.mu.Unlock()
		return
	}
	if st.tunnels == nil {
		st.tunnels = map[string]*tunnelSeen{}
	}
	now := p.cfg.Now()
	for _, s := range snaps {
		prev := st.tunnels[s.Mode]
		if prev == nil {
			prev = &tunnelSeen{}
		}
		cur := &tunnelSeen{state: s.State, node: s.Node, ups: s.Ups, lost: prev.lost, instance: tunnelInstance(sp, s.Mode),
			everUp: prev.everUp || s.State == tunnel.StateUp, refused: min(prev.refused, s.Refused), reportedAt: prev.reportedAt}
		if prev.instance != "" && cur.instance != prev.instance {
			// The process that held the tunnel is gone: what it counted
			// is not this one's to compare with.
			if prev.state == tunnel.StateUp || prev.state == tunnel.StateConnecting {
				events = append(events, event{corev1.EventTypeWarning, EventTunnelLost,
					fmt.Sprintf("%s tunnel lost: its container in shadow pod %s was restarted or replaced; the new one connects", s.Mode, sp.Name)})
			}
			prev = &tunnelSeen{state: tunnel.StateDown, everUp: prev.everUp}
			cur.lost = true
		}
		if n := s.Refused - cur.refused; n > 0 && (cur.reportedAt.IsZero() || now.Sub(cur.reportedAt) >= refusalEvery) {
			events = append(events, event{corev1.EventTypeWarning, EventForwardRefused,
				fmt.Sprintf("%d connection(s) to the job refused on the site since the last report; the last: %s", n, s.LastRefusal)})
			cur.refused, cur.reportedAt = s.Refused, now
		}
		switch s.State {
		case tunnel.StateUp:
			switch {
			case !prev.everUp:
				events = append(events, event{corev1.EventTypeNormal, EventTunnelReady,
					fmt.Sprintf("%s tunnel up: node %s reached over SSH", s.Mode, s.Node)})
			case prev.lost || prev.state != tunnel.StateUp || s.Ups > prev.ups:
				events = append(events, event{corev1.EventTypeNormal, EventTunnelBack,
					fmt.Sprintf("%s tunnel up again: node %s reached over SSH", s.Mode, s.Node)})
			}
			cur.lost = false
		case tunnel.StateDown:
			if prev.state != tunnel.StateDown {
				events = append(events, event{corev1.EventTypeWarning, EventTunnelLost,
					fmt.Sprintf("%s tunnel down (node %s): %s; reconnecting", s.Mode, s.Node, s.Error)})
			}
			cur.lost = true
		case tunnel.StateHostKeyRejected:
			if prev.state != tunnel.StateHostKeyRejected {
				events = append(events, event{corev1.EventTypeWarning, EventTunnelHostKey,
					fmt.Sprintf("%s tunnel refused a host key on the way to node %s and sent nothing (wrong pinned known_hosts, or a man-in-the-middle): %s", s.Mode, s.Node, s.Error)})
			}
			cur.lost = true
		}
		st.tunnels[s.Mode] = cur
	}
	cond := tunnelCondition(sp != nil, snaps, now)
	changed := setCondition(&st.pod.Status.Conditions, cond)
	st.tunnelCond = &cond
	pod := st.pod.DeepCopy()
	p.mu.Unlock()

	for _, e := range events {
		p.event(pod, e.typ, e.reason, "%s", e.msg)
		if e.typ == corev1.EventTypeWarning {
			p.log.Warn("provider: "+e.msg, "pod", keyOf(pod))
		} else {
			p.log.Info("provider: "+e.msg, "pod", keyOf(pod))
		}
	}
	if changed {
		p.push(st)
	}
}

// tunnelCondition is the TunnelReady condition for the tunnels' states.
func tunnelCondition(hasPod bool, snaps []tunnel.Snapshot, now time.Time) corev1.PodCondition {
	c := corev1.PodCondition{
		Type:               ConditionTunnelReady,
		Status:             corev1.ConditionTrue,
		Reason:             "TunnelsUp",
		LastTransitionTime: metav1.NewTime(now.Truncate(time.Second)),
	}
	if len(snaps) == 0 {
		c.Status, c.Reason, c.Message = corev1.ConditionFalse, "ShadowNotRunning", "the shadow's tunnel containers are not running yet"
		if !hasPod {
			c.Reason, c.Message = "ShadowPodMissing", "the shadow has no pod"
		}
		return c
	}
	var up, down []string
	for _, s := range snaps {
		if s.State == tunnel.StateUp {
			up = append(up, s.Mode)
			continue
		}
		if c.Status == corev1.ConditionTrue {
			c.Status, c.Reason = corev1.ConditionFalse, conditionReason(s.State)
		}
		msg := s.Mode + " " + string(s.State)
		if s.Error != "" {
			msg += ": " + s.Error
		}
		down = append(down, msg)
	}
	if c.Status == corev1.ConditionTrue {
		c.Message = strings.Join(up, " and ") + " up on node " + snaps[0].Node
	} else {
		c.Message = strings.Join(down, "; ")
	}
	return c
}

// conditionReason is the condition reason of a tunnel state (CamelCase).
func conditionReason(s tunnel.State) string {
	switch s {
	case tunnel.StateWaiting:
		return "WaitingForNode"
	case tunnel.StateConnecting:
		return "Connecting"
	case tunnel.StateHostKeyRejected:
		return "HostKeyRejected"
	}
	return "TunnelDown"
}

// setCondition puts c in conds, in place of one of its type; the
// transition time of an unchanged status is kept. It reports whether conds
// changed.
func setCondition(conds *[]corev1.PodCondition, c corev1.PodCondition) bool {
	for i, old := range *conds {
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		if old == c {
			return false
		}
		(*conds)[i] = c
		return true
	}
	*conds = append(*conds, c)
	return true
}
