package kubeletstream

import "time"

// Limits bound what the kubelet API's streaming requests hold at once, and
// for how long. The zero value has the defaults.
type Limits struct {
	// PerPod and PerNode bound the sessions of each kind (exec, attach,
	// port-forward, each counted apart) of one pod and of the whole node.
	// If zero, 4 and 8. Each exec holds a session on the one login
	// connection, so PerNode stays within the login sshd's MaxSessions
	// (OpenSSH: 10).
	PerPod, PerNode int
	// Confined tells that the node serves one namespace (TenantNamespace
	// with RefuseForeignPods): that namespace may take the whole node.
	// Otherwise a namespace gets half of each node-wide bound (rounded
	// up), so that one tenant cannot take every session, stream or
	// carrier slot of the node.
	Confined bool
	// Creation bounds the wait for a session's streams after its
	// upgrade (a kubelet's streamRequestTimeout). If zero, 30 s.
	Creation time.Duration
	// Idle ends a session whose connection carried nothing this long (a
	// kubelet's streamingConnectionIdleTimeout). If zero, 4 hours.
	Idle time.Duration
	// StreamIdle ends a port-forward stream that carried nothing either
	// way this long, so that a stream the job never ends and the client
	// forgot does not hold its place (or an srun carrier slot) for ever.
	// If zero, 15 minutes.
	StreamIdle time.Duration
	// Stall ends a session whose client took nothing of what it was sent
	// this long: what the job sends meanwhile waits in sluice-vk's memory
	// (up to an SSH channel's 2 MiB window per stream). If zero, 30 s.
	Stall time.Duration
}

// Port-forward streams at once, of one session, one pod and the node: each
// may hold an SSH channel's window (2 MiB) of what the job sent while the
// client does not read (for at most Stall), so the node's bound keeps
// that within sluice-vk's memory (64 × 2 MiB: 128 MiB).
const (
	streamsPerSession = 32
	streamsPerPod     = 32
	streamsPerNode    = 64
)

func (l Limits) sessions() caps {
	pod, node := l.PerPod, l.PerNode
	if pod <= 0 {
		pod = 4
	}
	if node <= 0 {
		node = 8
	}
	return caps{what: "sessions", pod: pod, namespace: l.share(node), node: node}
}

func (l Limits) streams() caps {
	return caps{what: "port-forward streams", pod: streamsPerPod, namespace: l.share(streamsPerNode), node: streamsPerNode}
}

// share is a namespace's part of a node-wide bound n.
func (l Limits) share(n int) int {
	if l.Confined {
		return n
	}
	return (n + 1) / 2
}

func (l Limits) creation() time.Duration { return orDefault(l.Creation, 30*time.Second) }
func (l Limits) idle() time.Duration     { return orDefault(l.Idle, 4*time.Hour) }
func (l Limits) streamIdle() time.Duration {
	return orDefault(l.StreamIdle, 15*time.Minute)
}
func (l Limits) stall() time.Duration { return orDefault(l.Stall, 30*time.Second) }

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
