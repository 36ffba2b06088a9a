//go:build bench

package main

import (
	"context"
	"time"

	"github.com/sluice-hpc/sluice/bench/internal/procstat"
)

// usage is what a set of process trees holds and has used.
type usage struct {
	procs int
	rssKB int64         // sum of VmRSS
	pssKB int64         // sum of Pss (shared pages split between sharers)
	cpu   time.Duration // user and system time, with that of reaped children
}

// treeUsage adds up the usage of the processes roots and all their
// descendants.
func treeUsage(roots []int) usage {
	var u usage
	for _, pid := range procstat.Descendants(roots...) {
		st, err := procstat.ReadStat(pid)
		if err != nil {
			continue
		}
		u.procs++
		u.cpu += st.CPU + st.ChildrenCPU
		if m, err := procstat.ReadMemory(pid); err == nil {
			u.rssKB += m.RSS >> 10
		}
		if pss, err := procstat.ReadPSS(pid); err == nil {
			u.pssKB += pss >> 10
		}
	}
	return u
}

// sampler records the largest usage of process trees while a test runs.
type sampler struct {
	roots []int
	peak  usage
	stop  context.CancelFunc
	done  chan struct{}
}

// sample starts sampling roots every 100ms until end is called.
func sample(roots []int) *sampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &sampler{roots: roots, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			u := treeUsage(roots)
			if u.rssKB > s.peak.rssKB {
				s.peak.rssKB, s.peak.procs = u.rssKB, u.procs
			}
			s.peak.pssKB = max(s.peak.pssKB, u.pssKB)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// end stops sampling and returns the peak.
func (s *sampler) end() usage {
	s.stop()
	<-s.done
	return s.peak
}
