//go:build bench

package main

import (
	"slices"
	"time"
)

// ramp is how the pods of one step, [from, to), went from their create to
// Running: per pod, and in each minute counted from the step's first
// create.
type ramp struct {
	pods        int
	first, last time.Time       // first create sent, last pod Running
	latency     []time.Duration // create sent → first seen Running, sorted
	perMinute   []int           // pods first seen Running in minute k of the step
}

// rampOf reads the ramp of pods [from, to) from the tracker.
func (t *tracker) rampOf(from, to int) ramp {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := ramp{pods: to - from}
	for i := from; i < to; i++ {
		sent := t.sent[podName(i)]
		if r.first.IsZero() || sent.Before(r.first) {
			r.first = sent
		}
	}
	for i := from; i < to; i++ {
		name := podName(i)
		run, ok := t.running[name]
		if !ok {
			continue
		}
		r.latency = append(r.latency, run.Sub(t.sent[name]))
		r.last = maxTime(r.last, run)
		k := int(run.Sub(r.first) / time.Minute)
		for len(r.perMinute) <= k {
			r.perMinute = append(r.perMinute, 0)
		}
		r.perMinute[k]++
	}
	slices.Sort(r.latency)
	return r
}

// overall is the step's pods Running per minute, from its first create to
// its last pod Running.
func (r ramp) overall() float64 {
	d := r.last.Sub(r.first)
	if d <= 0 {
		return 0
	}
	return float64(len(r.latency)) / d.Minutes()
}

// fullMinutes is the pods Running in each whole minute of the step: the
// last, cut short by the step's end, is left out.
func (r ramp) fullMinutes() []int {
	whole := int(r.last.Sub(r.first) / time.Minute)
	return r.perMinute[:min(whole, len(r.perMinute))]
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
