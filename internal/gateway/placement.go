package gateway

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Placement is where an offloaded pod's job runs, as sluice-vk records it
// in its shadow's node ConfigMap: a requeue or a move to another node
// changes it.
type Placement struct {
	Node      string
	Job       string
	SocketDir string
}

func (p Placement) String() string {
	return fmt.Sprintf("job %q on node %q (socket directory %q)", p.Job, p.Node, p.SocketDir)
}

// placement is where g's job ran when g was made.
func (g *Grant) placement() Placement {
	return Placement{Node: g.Node, Job: g.Job, SocketDir: g.SocketDir}
}

// move is the latest placement reported for a node ConfigMap: its
// sequence number among the reports, when, and where (nil: the ConfigMap
// is gone).
type move struct {
	seq uint64
	at  time.Time
	to  *Placement
}

// PlacementChanged tells the server that the node ConfigMap record now
// says to (nil when it is gone): the connections of the shadows whose
// grants were read from it, and which a placement other than to, are
// closed; each shadow reconnects and is judged again, so that its tunnels
// follow the job to its new node or socket directory. A PlacementWatcher
// calls it; it may be called at any time, before Serve or during it.
func (s *Server) PlacementChanged(record types.NamespacedName, to *Placement) {
	now := time.Now()
	s.mu.Lock()
	if s.moves == nil {
		s.moves = make(map[types.NamespacedName]move)
	}
	s.seq++
	s.moves[record] = move{seq: s.seq, at: now, to: to}
	// A move matters only to a handshake under way when it was reported;
	// a handshake lasts HandshakeTimeout at most.
	keep := 2 * orDefault(s.HandshakeTimeout, 20*time.Second)
	for r, m := range s.moves {
		if now.Sub(m.at) > keep {
			delete(s.moves, r)
		}
	}
	var stale []*shadowConn
	for _, conns := range s.conns {
		for sc := range conns {
			if sc.grant.NodeConfigMap == record && moved(sc.grant, to) != "" {
				stale = append(stale, sc)
			}
		}
	}
	s.mu.Unlock()
	for _, sc := range stale {
		sc.close(fmt.Errorf("grant changed: %s", moved(sc.grant, to)))
	}
}

// placementSeq is the sequence number of the latest placement reported.
func (s *Server) placementSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// movedSince says why g, read from the records after the report numbered
// seq was made, no longer holds: its node ConfigMap was reported changed
// since, to another placement or gone. "" when it holds. It closes the
// window between reading a grant and the server knowing its connection,
// when a report finds no connection to close.
func (s *Server) movedSince(seq uint64, g *Grant) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.moves[g.NodeConfigMap]
	if !ok || m.seq <= seq || g.NodeConfigMap == (types.NamespacedName{}) {
		return ""
	}
	return moved(g, m.to)
}

// moved says how the placement of g differs from to (nil: its record is
// gone), "" when it does not.
func moved(g *Grant, to *Placement) string {
	switch {
	case to == nil:
		return fmt.Sprintf("node ConfigMap %s is gone", g.NodeConfigMap)
	case *to != g.placement():
		return fmt.Sprintf("the job moved from %s to %s", g.placement(), to)
	}
	return ""
}
