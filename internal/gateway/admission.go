package gateway

import (
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// admission bounds the connections still in their handshake, apart from
// the authenticated ones, so that whoever reaches the gateway's port
// cannot hold every slot with connections that never log in. As robust
// SSH servers do, it caps them in all (dropping at random past half the
// cap, more often as it fills), caps them per source address (shadows
// come from pod addresses, so one source has few handshakes at once), and
// refuses for a while a source whose handshakes keep failing.
type admission struct {
	max, perSource int
	now            func() time.Time
	drop           func() float64 // uniform in [0, 1)

	mu      sync.Mutex
	total   int
	open    map[string]int      // handshakes in progress, by source
	sources map[string]*penalty // failures, by source
	pruned  time.Time           // when sources was last swept
}

// penalty is a source's record of failed handshakes.
type penalty struct {
	fails int
	last  time.Time // of the last failure
	until time.Time // refused until then
}

const (
	// freeFailures are the failed handshakes a source has before it is
	// penalised: a shadow's token may be refused while its grant is
	// being made.
	freeFailures = 3
	// basePenalty doubles with each further failure, up to maxPenalty.
	basePenalty, maxPenalty = time.Second, 30 * time.Second
	// forgetFailures is how long after its last failure a source's
	// record is forgotten.
	forgetFailures = 5 * time.Minute
	// maxSources bounds the records of failing sources; while it is
	// reached, a new failing source goes unrecorded rather than grow the
	// map, and the map is swept for expired records at most once every
	// pruneEvery, so that a flood of new sources does not make each
	// failure walk every record under the lock.
	maxSources = 1 << 16
	pruneEvery = time.Second
)

func newAdmission(max, perSource int) *admission {
	return &admission{
		max:       max,
		perSource: perSource,
		now:       time.Now,
		drop:      rand.Float64,
		open:      make(map[string]int),
		sources:   make(map[string]*penalty),
	}
}

// sourceOf is the key of addr's source: its IP address.
func sourceOf(addr net.Addr) string {
	if ta, ok := addr.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	if host, _, err := net.SplitHostPort(addr.String()); err == nil {
		return host
	}
	return addr.String()
}

// admit reports whether a new handshake from src may start, and why not;
// if it may, the caller calls done when the handshake ends.
func (a *admission) admit(src string) (ok bool, why string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p := a.sources[src]; p != nil && a.now().Before(p.until) {
		return false, "source penalised for failed handshakes"
	}
	if a.open[src] >= a.perSource {
		return false, "too many handshakes from the source"
	}
	if a.total >= a.max {
		return false, "too many handshakes"
	}
	// Past half the cap, drop with a chance growing from 0 to 1 at the
	// cap, so that a flood cannot fill it deterministically.
	if start := a.max / 2; a.total > start && a.drop() < float64(a.total-start)/float64(a.max-start) {
		return false, "too many handshakes (random early drop)"
	}
	a.total++
	a.open[src]++
	return true, ""
}

// done ends a handshake admit let start; authenticated reports whether
// it logged a shadow in. A source's failures are forgotten when it
// authenticates.
func (a *admission) done(src string, authenticated bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.total--
	if a.open[src]--; a.open[src] <= 0 {
		delete(a.open, src)
	}
	if authenticated {
		delete(a.sources, src)
		return
	}
	now := a.now()
	p := a.sources[src]
	if p == nil {
		if len(a.sources) >= maxSources {
			if now.Sub(a.pruned) >= pruneEvery {
				a.prune(now)
			}
			if len(a.sources) >= maxSources {
				return
			}
		}
		p = &penalty{}
		a.sources[src] = p
	}
	if now.Sub(p.last) > forgetFailures {
		p.fails = 0
	}
	p.fails++
	p.last = now
	if n := p.fails - freeFailures; n > 0 {
		d := maxPenalty
		if n <= 5 {
			d = min(basePenalty<<(n-1), maxPenalty)
		}
		p.until = now.Add(d)
	}
}

// prune forgets the sources whose last failure is old enough.
func (a *admission) prune(now time.Time) {
	a.pruned = now
	for src, p := range a.sources {
		if now.Sub(p.last) > forgetFailures {
			delete(a.sources, src)
		}
	}
}
