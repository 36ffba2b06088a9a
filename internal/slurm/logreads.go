package slurm

import (
	"context"
	"sync"

	"github.com/sluice-hpc/sluice/internal/site"
)

// maxLogReads is how many reads of the logs' history (`kubectl logs`, the
// look back of --tail, a follower catching up to its feed) run on the site
// at once, together. Each is a dd command in one of the connection's
// command sessions (MaxSessions - 1, 9 by default), which the status poll
// and the submissions need too: the readers of long logs, however many,
// must leave them most. A feed's own reads, one per followed container,
// are not counted.
const maxLogReads = 2

// logReadSlots are a Client's slots of log history reads. The zero value
// is ready.
type logReadSlots struct {
	once  sync.Once
	slots chan struct{}
}

func (s *logReadSlots) get() chan struct{} {
	s.once.Do(func() { s.slots = make(chan struct{}, maxLogReads) })
	return s.slots
}

// history is c.Site with each read taking one of c's log read slots.
func (c *Client) history() site.Runner {
	return historyReads{Runner: c.Site, slots: c.logReads.get()}
}

type historyReads struct {
	site.Runner
	slots chan struct{}
}

func (h historyReads) ReadAt(ctx context.Context, p string, off int64, n int) ([]byte, error) {
	select {
	case h.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-h.slots }()
	return h.Runner.ReadAt(ctx, p, off, n)
}
