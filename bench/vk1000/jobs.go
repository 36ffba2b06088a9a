//go:build bench

package main

import (
	"context"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/sluice-hpc/sluice/internal/slurm"
)

// countingJobs wraps the provider's Slurm client and records every Status
// call with the site commands run during it.
type countingJobs struct {
	provider.Jobs
	site *fakeSite

	mu    sync.Mutex
	polls []pollRecord
	// ended is when a Status call first returned each job (by pod UID) in
	// a final state.
	ended map[string]time.Time
}

// pollRecord is one Status call: when, how many pods, what it ran.
type pollRecord struct {
	at   time.Time
	refs int
	ran  counts
	took time.Duration
	err  error
}

func (j *countingJobs) Status(ctx context.Context, refs []slurm.JobRef) (map[string]slurm.Status, error) {
	before := j.site.counts()
	start := time.Now()
	res, err := j.Jobs.Status(ctx, refs)
	rec := pollRecord{at: start, refs: len(refs), ran: j.site.counts().sub(before), took: time.Since(start), err: err}
	now := time.Now()
	j.mu.Lock()
	j.polls = append(j.polls, rec)
	for uid, st := range res {
		if _, seen := j.ended[uid]; !seen && st.State.Final() {
			if j.ended == nil {
				j.ended = map[string]time.Time{}
			}
			j.ended[uid] = now
		}
	}
	j.mu.Unlock()
	return res, err
}

// since is the Status calls that started at or after t.
func (j *countingJobs) since(t time.Time) []pollRecord {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []pollRecord
	for _, p := range j.polls {
		if !p.at.Before(t) {
			out = append(out, p)
		}
	}
	return out
}

// endSeen is when a Status call first returned the job of uid ended.
func (j *countingJobs) endSeen(uid string) (time.Time, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	t, ok := j.ended[uid]
	return t, ok
}
