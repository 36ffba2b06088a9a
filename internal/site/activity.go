package site

import (
	"context"
	"sync"
	"time"
)

// Activity records the commands a runner has in flight, so that a health
// check can tell a runner that is working from one that is stuck: a
// command still in flight well past its context's deadline means the
// runner failed to kill it and give its session back. The zero value is
// ready to use; a nil *Activity records nothing.
type Activity struct {
	mu       sync.Mutex
	next     uint64
	inflight map[uint64]Command
}

// Command is a command in flight.
type Command struct {
	// Name is the command's name (args[0]).
	Name string
	// Started is when the runner took it.
	Started time.Time
	// Deadline is its context's deadline; zero if it has none.
	Deadline time.Time
}

// begin records a command starting now; the returned func records its end.
func (a *Activity) begin(ctx context.Context, name string) (end func()) {
	if a == nil {
		return func() {}
	}
	c := Command{Name: name, Started: time.Now()}
	c.Deadline, _ = ctx.Deadline()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.inflight == nil {
		a.inflight = map[uint64]Command{}
	}
	a.next++
	id := a.next
	a.inflight[id] = c
	return func() {
		a.mu.Lock()
		delete(a.inflight, id)
		a.mu.Unlock()
	}
}

// InFlight returns the commands in flight, in no order.
func (a *Activity) InFlight() []Command {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Command, 0, len(a.inflight))
	for _, c := range a.inflight {
		out = append(out, c)
	}
	return out
}

// Overdue returns the command furthest past its bound at now, if one is:
// a command's bound is its deadline plus grace, or, without a deadline,
// its start plus maxAge.
func Overdue(cmds []Command, now time.Time, grace, maxAge time.Duration) (Command, time.Duration, bool) {
	var worst Command
	var by time.Duration
	for _, c := range cmds {
		bound := c.Started.Add(maxAge)
		if !c.Deadline.IsZero() {
			bound = c.Deadline.Add(grace)
		}
		if late := now.Sub(bound); late > by {
			worst, by = c, late
		}
	}
	return worst, by, by > 0
}
