package provider

import (
	"context"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/slurm"
)

// UsageReader reads what Slurm's accounting tells of running jobs
// (slurm.Client.Usage): one call for all of them.
type UsageReader interface {
	Usage(ctx context.Context, jobs []slurm.JobID) (map[slurm.JobID]slurm.Usage, error)
}

var _ UsageReader = (*slurm.Client)(nil)

// jobUsage is a job's usage as the stats endpoints report it.
type jobUsage struct {
	slurm.Usage
	// NanoCores is the CPU the job used per second between the two last
	// reads that saw it, in billionths of a core; nil after one read.
	NanoCores *uint64
}

// nodeUsage is the node's: the sum over its jobs.
type nodeUsage struct {
	// CPU is the CPU time of every job seen since the sampler started:
	// the jobs running now and those that ended (Kubernetes reads it as a
	// counter, which must not go down when a job ends).
	CPU       time.Duration
	Memory    int64
	NanoCores uint64
	Time      time.Time
	Start     time.Time
}

// usageSampler reads the usage of the node's running jobs at most once
// per interval, however many scrapers ask (metrics-server, a Prometheus
// scraping /stats/summary), and keeps the reads before for rates.
type usageSampler struct {
	read     UsageReader
	interval time.Duration
	now      func() time.Time
	start    time.Time

	// sem is held by the one read in flight; callers wait on it or give
	// up with their context.
	sem chan struct{}
	// the fields below are guarded by sem
	last    time.Time // when the jobs were last read; zero before
	jobs    map[slurm.JobID]*jobSeries
	retired time.Duration // CPU time of jobs no longer running
}

// jobSeries is a job's two last reads.
type jobSeries struct {
	cur, prev slurm.Usage
	hasPrev   bool
}

func newUsageSampler(read UsageReader, interval time.Duration, now func() time.Time) *usageSampler {
	if interval <= 0 {
		interval = config.DefaultStatsInterval
	}
	return &usageSampler{read: read, interval: interval, now: now, start: now(),
		sem: make(chan struct{}, 1), jobs: map[slurm.JobID]*jobSeries{}}
}

// sample returns the usage of jobs (those of them Slurm reports) and of
// the node, reading it from the site unless the last read is younger than
// the interval. A job left out of jobs is no longer running: its CPU time
// stays in the node's total.
func (s *usageSampler) sample(ctx context.Context, jobs []slurm.JobID) (map[slurm.JobID]jobUsage, nodeUsage, error) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, nodeUsage{}, ctx.Err()
	}
	defer func() { <-s.sem }()
	if now := s.now(); s.last.IsZero() || now.Sub(s.last) >= s.interval {
		got, err := s.read.Usage(ctx, jobs)
		if err != nil {
			return nil, nodeUsage{}, err
		}
		s.update(jobs, got)
		s.last = now
	}
	return s.report(jobs)
}

// update takes a read of jobs in.
func (s *usageSampler) update(jobs []slurm.JobID, got map[slurm.JobID]slurm.Usage) {
	asked := idSet(jobs)
	for id, js := range s.jobs {
		if !asked[id] {
			s.retired += js.cur.CPU
			delete(s.jobs, id)
		}
	}
	for id, u := range got {
		js, ok := s.jobs[id]
		switch {
		case !ok:
			s.jobs[id] = &jobSeries{cur: u}
		case u.CPU < js.cur.CPU: // a new batch step: the job was requeued
			s.retired += js.cur.CPU
			*js = jobSeries{cur: u}
		case u.Time.After(js.cur.Time):
			js.prev, js.cur, js.hasPrev = js.cur, u, true
		}
	}
}

// report is the figures of the last reads: for those of jobs they saw,
// and for the node.
func (s *usageSampler) report(jobs []slurm.JobID) (map[slurm.JobID]jobUsage, nodeUsage, error) {
	out := make(map[slurm.JobID]jobUsage, len(jobs))
	node := nodeUsage{CPU: s.retired, Time: s.last, Start: s.start}
	for id, js := range s.jobs {
		ju := jobUsage{Usage: js.cur}
		if dt := js.cur.Time.Sub(js.prev.Time); js.hasPrev && dt > 0 {
			rate := uint64(float64(js.cur.CPU-js.prev.CPU) / float64(dt) * 1e9)
			ju.NanoCores = &rate
			node.NanoCores += rate
		}
		node.CPU += js.cur.CPU
		node.Memory += js.cur.Memory
		out[id] = ju
	}
	asked := idSet(jobs)
	for id := range out {
		if !asked[id] {
			delete(out, id) // ended since the last read
		}
	}
	return out, node, nil
}

func idSet(ids []slurm.JobID) map[slurm.JobID]bool {
	set := make(map[slurm.JobID]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set
}
