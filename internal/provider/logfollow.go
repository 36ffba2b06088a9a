package provider

import (
	"context"
	"io"
	"sync"

	"github.com/sluice-hpc/sluice/internal/slurm"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
)

// Default caps of the followed logs (`kubectl logs -f`, attach's output)
// open at once. Followers of one container share one reading of its log,
// so they cost the site little, but each holds a stream through the API
// server and a queue of up to a few MiB in sluice-vk.
const (
	DefaultMaxLogFollowers             = 100
	DefaultMaxLogFollowersPerNamespace = 20
)

// followerCount counts the followed logs open at once, on the node and by
// namespace. The zero value counts none.
type followerCount struct {
	mu    sync.Mutex
	total int
	byNS  map[string]int
}

// acquire counts one more follower in namespace, or refuses it beyond the
// node's or the namespace's cap; release gives the place back.
func (f *followerCount) acquire(namespace string, perNode, perNS int) (release func(), err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.byNS[namespace] >= perNS:
		return nil, errdefs.InvalidInputf("too many log followers in namespace %s (at most %d at once): stop a kubectl logs -f", namespace, perNS)
	case f.total >= perNode:
		return nil, errdefs.InvalidInputf("too many log followers on node (at most %d at once): stop a kubectl logs -f", perNode)
	}
	if f.byNS == nil {
		f.byNS = map[string]int{}
	}
	f.byNS[namespace]++
	f.total++
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.total--
			if f.byNS[namespace]--; f.byNS[namespace] == 0 {
				delete(f.byNS, namespace)
			}
		})
	}, nil
}

// followLogs follows a container's log, within the caps. The log ends when
// the status poll sees the container end (update calls Jobs.EndLogs); a
// container that has already ended is read to its end, uncounted.
func (p *Provider) followLogs(ctx context.Context, st *podState, container string, opts slurm.LogOptions) (io.ReadCloser, error) {
	ended, ref, namespace := p.logEnded(st, container)
	if ended {
		opts.Follow = false
		return p.cfg.Jobs.Logs(ctx, ref, container, opts)
	}
	release, err := p.follows.acquire(namespace, p.cfg.MaxLogFollowers, p.cfg.MaxLogFollowersPerNamespace)
	if err != nil {
		return nil, err
	}
	rc, err := p.cfg.Jobs.Logs(ctx, ref, container, opts)
	if err != nil {
		release()
		return nil, err
	}
	// The poll may have seen the container end after the look above but
	// before the log's feed started, and then ended no feed.
	if ended, _, _ := p.logEnded(st, container); ended {
		p.cfg.Jobs.EndLogs(ref.UID, container)
	}
	return &followedLog{ReadCloser: rc, release: release}, nil
}

// logEnded reports whether the status poll saw the container of st end.
func (p *Provider) logEnded(st *podState, container string) (ended bool, ref slurm.JobRef, namespace string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return st.final || jobGone(st.last) || st.last.Containers[container].Finished, st.ref, st.pod.Namespace
}

// jobGone reports whether the job was found nowhere (not in squeue, sacct
// or its exit files): nothing is left to write its logs.
func jobGone(js slurm.Status) bool { return js.State == slurm.StateUnknown }

// endLogs ends the followed logs of the containers that the status poll,
// going from prev to cur, saw end: all of them once the job is over, or
// found nowhere.
func (p *Provider) endLogs(uid string, prev, cur slurm.Status, final bool) {
	if final || jobGone(cur) {
		p.cfg.Jobs.EndLogs(uid)
		return
	}
	var ended []string
	for name, cs := range cur.Containers {
		if cs.Finished && !prev.Containers[name].Finished {
			ended = append(ended, name)
		}
	}
	if len(ended) > 0 {
		p.cfg.Jobs.EndLogs(uid, ended...)
	}
}

// followedLog is a followed log that gives its place back when closed.
type followedLog struct {
	io.ReadCloser
	release func()
}

func (f *followedLog) Close() error {
	f.release()
	return f.ReadCloser.Close()
}
