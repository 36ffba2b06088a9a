package provider

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/sluice-hpc/sluice/internal/slurm"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// countingSite is a local site (a real filesystem) that counts what a
// virtual kubelet would ask of the login node, and answers squeue as if the
// job ran.
type countingSite struct {
	site.Local
	mu                   sync.Mutex
	reads, stats, squeue int
	other                []string
}

func (s *countingSite) Run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if program(args) == "squeue" {
		s.squeue++
		sep := squeueSep.FindString(strings.Join(args, " "))
		fields := []string{"101", "RUNNING", "None", "node1", "1", "NONE", followUID}
		return []byte(strings.Join(fields, sep) + sep + "\n"), nil
	}
	s.other = append(s.other, program(args))
	return nil, &site.ExitError{Args: args, Code: 127, Stderr: "not on this fake site"}
}

func (s *countingSite) ReadAt(ctx context.Context, p string, off int64, n int) ([]byte, error) {
	s.mu.Lock()
	s.reads++
	s.mu.Unlock()
	return s.Local.ReadAt(ctx, p, off, n)
}

func (s *countingSite) Stat(ctx context.Context, p string) (os.FileInfo, error) {
	s.mu.Lock()
	s.stats++
	s.mu.Unlock()
	return s.Local.Stat(ctx, p)
}

// squeueSep finds the field separator in squeue's format.
var squeueSep = regexp.MustCompile(`\|[0-9a-f]{16}\|`)

// program is the program a command line runs, past env and its assignments.
func program(args []string) string {
	for i, a := range args {
		if (i > 0 || a != "env") && !strings.Contains(a, "=") {
			return a
		}
	}
	return ""
}

// calls is every call made to the site so far.
func (s *countingSite) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads + s.stats + s.squeue + len(s.other)
}

const followUID = "0b6f5b4e-9d0c-4a57-8a43-3c2f1d3e5a01"

// followRig is a provider whose jobs client is a real slurm.Client over a
// counting local site, with one running pod whose main container logs to
// a real file.
type followRig struct {
	t    *testing.T
	p    *Provider
	site *countingSite
	st   *podState
	log  string // the path of main's log
}

func newFollowRig(t *testing.T, edit func(*Config)) *followRig {
	t.Helper()
	root := t.TempDir()
	cs := &countingSite{}
	jobs := &slurm.Client{Site: cs, DataRoot: root, PollInterval: 5 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "chatty", Namespace: "ns", UID: types.UID(followUID)},
		Spec:       corev1.PodSpec{NodeName: "hpc", Containers: []corev1.Container{{Name: "main", Image: "/images/busybox"}}},
	}
	cfg := Config{
		NodeName: "hpc", Jobs: jobs, Runtime: jobscript.RuntimeCharliecloud,
		Client: fake.NewClientset(), Pods: corev1listers.NewPodLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})),
		Recorder: record.NewFakeRecorder(100), Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)),
	}
	if edit != nil {
		edit(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ref := jobs.Ref("ns", followUID, "101")
	if err := os.Mkdir(ref.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	r := &followRig{t: t, p: p, site: cs, log: filepath.Join(ref.Dir, jobscript.LogFile("main"))}
	r.write("2026-01-02T03:04:01Z first\n")
	r.st = &podState{pod: pod, ref: ref, submitted: true,
		last: slurm.Status{JobID: "101", State: slurm.StateRunning, Containers: map[string]slurm.ContainerStatus{"main": {Started: true}}}}
	p.pods[keyOf(pod)] = r.st
	return r
}

// write appends to main's log, as the container does.
func (r *followRig) write(s string) {
	r.t.Helper()
	f, err := os.OpenFile(r.log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		r.t.Fatal(err)
	}
}

// follow opens n followers of main and reads the first line of each.
func (r *followRig) follow(n int) []*bufio.Reader {
	r.t.Helper()
	var out []*bufio.Reader
	for range n {
		rc, err := r.p.GetContainerLogs(context.Background(), "ns", "chatty", "main", api.ContainerLogOpts{Follow: true})
		if err != nil {
			r.t.Fatalf("GetContainerLogs: %v", err)
		}
		r.t.Cleanup(func() { rc.Close() })
		br := bufio.NewReader(rc)
		if line, err := br.ReadString('\n'); err != nil || line != "first\n" {
			r.t.Fatalf("first line: %q, %v", line, err)
		}
		out = append(out, br)
	}
	return out
}

// idleCalls counts the site calls the followers make in a second of quiet.
func (r *followRig) idleCalls() int {
	before := r.site.calls()
	time.Sleep(time.Second)
	return r.site.calls() - before
}

// TestFollowersShareOneReading: 50 followers of one container cost the site
// what one does, and none of them asks squeue.
func TestFollowersShareOneReading(t *testing.T) {
	one := newFollowRig(t, nil)
	one.follow(1)
	base := one.idleCalls()

	many := newFollowRig(t, func(c *Config) { c.MaxLogFollowersPerNamespace = 50 })
	many.follow(50)
	got := many.idleCalls()
	t.Logf("site calls in a second of quiet: %d with one follower, %d with 50", base, got)
	if got > 2*base+4 {
		t.Errorf("50 followers made %d site calls in a second; one made %d: want about the same", got, base)
	}
	many.site.mu.Lock()
	defer many.site.mu.Unlock()
	if many.site.squeue != 0 {
		t.Errorf("followers ran squeue %d times; want 0 (the status poll tells them the container ended)", many.site.squeue)
	}
}

// TestFollowersSeeWhatIsWrittenAndEndWithThePoll: every follower gets the
// lines written after it joined, and ends, with what was written last, when
// the status poll says the job is over.
func TestFollowersSeeWhatIsWrittenAndEndWithThePoll(t *testing.T) {
	r := newFollowRig(t, nil)
	readers := r.follow(5)
	r.write("2026-01-02T03:04:02Z second\n2026-01-02T03:04:03Z last, no newline")
	r.p.update(context.Background(), r.st, slurm.Status{JobID: "101", State: slurm.StateCompleted,
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true, Finished: true}}})
	for i, br := range readers {
		done := make(chan string, 1)
		go func() {
			rest, err := io.ReadAll(br)
			if err != nil {
				rest = append(rest, " error: "+err.Error()...)
			}
			done <- string(rest)
		}()
		select {
		case got := <-done:
			if want := "second\nlast, no newline"; got != want {
				t.Errorf("follower %d read %q after the first line; want %q", i, got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("follower %d did not end when the status poll said the job completed", i)
		}
	}
}

// TestFollowersAreCapped: beyond the namespace's and the node's share,
// `kubectl logs -f` is refused with a message that says why; a follower
// that ends gives its place back.
func TestFollowersAreCapped(t *testing.T) {
	r := newFollowRig(t, func(c *Config) { c.MaxLogFollowersPerNamespace = 3; c.MaxLogFollowers = 4 })
	var open []io.ReadCloser
	for range 3 {
		rc, err := r.p.GetContainerLogs(context.Background(), "ns", "chatty", "main", api.ContainerLogOpts{Follow: true})
		if err != nil {
			t.Fatalf("follower within the cap: %v", err)
		}
		open = append(open, rc)
	}
	_, err := r.p.GetContainerLogs(context.Background(), "ns", "chatty", "main", api.ContainerLogOpts{Follow: true})
	if !errdefs.IsInvalidInput(err) || err.Error() != "too many log followers in namespace ns (at most 3 at once): stop a kubectl logs -f" {
		t.Errorf("a fourth follower in ns: got %v; want refused for namespace ns", err)
	}
	if rc, err := r.p.GetContainerLogs(context.Background(), "ns", "chatty", "main", api.ContainerLogOpts{}); err != nil {
		t.Errorf("logs without follow over the cap: %v", err)
	} else {
		rc.Close()
	}
	open[0].Close()
	rc, err := r.p.GetContainerLogs(context.Background(), "ns", "chatty", "main", api.ContainerLogOpts{Follow: true})
	if err != nil {
		t.Fatalf("a follower after one ended: %v", err)
	}
	open = append(open[1:], rc)
	for _, rc := range open {
		rc.Close()
	}
}

// TestFollowerCapOfTheNode: the node's cap holds across namespaces.
func TestFollowerCapOfTheNode(t *testing.T) {
	var c followerCount
	for _, ns := range []string{"a", "a", "b"} {
		if _, err := c.acquire(ns, 3, 2); err != nil {
			t.Fatalf("follower in %s within the caps: %v", ns, err)
		}
	}
	_, err := c.acquire("c", 3, 2)
	if !errdefs.IsInvalidInput(err) || err.Error() != "too many log followers on node (at most 3 at once): stop a kubectl logs -f" {
		t.Errorf("a fourth follower on a node of 3: got %v; want refused for the node", err)
	}
}

// TestFollowingAnEndedContainerReadsItsLog: once the poll saw the container
// end, logs -f reads the log to its end at once, and counts against no cap.
func TestFollowingAnEndedContainerReadsItsLog(t *testing.T) {
	r := newFollowRig(t, func(c *Config) { c.MaxLogFollowersPerNamespace = 1 })
	r.follow(1) // the namespace's one place
	r.write("2026-01-02T03:04:02Z last\n")
	r.p.update(context.Background(), r.st, slurm.Status{JobID: "101", State: slurm.StateRunning,
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true, Finished: true}}})
	rc, err := r.p.GetContainerLogs(context.Background(), "ns", "chatty", "main", api.ContainerLogOpts{Follow: true})
	if err != nil {
		t.Fatalf("logs -f of an ended container: %v", err)
	}
	defer rc.Close()
	if got, err := io.ReadAll(rc); err != nil || string(got) != "first\nlast\n" {
		t.Errorf("logs -f of an ended container: %q, %v; want its whole log", got, err)
	}
}

// TestThePollEndsOnlyWhatEnded: a container that the poll sees finish ends
// its own followed log, not its job's others; a job found nowhere ends all.
func TestThePollEndsOnlyWhatEnded(t *testing.T) {
	pod := testPod("two")
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "side", Image: "/images/busybox", Command: []string{"true"}})
	h := newHarness(t, nil, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("submitted as Slurm job 101")
	running := slurm.Status{State: slurm.StateRunning, BatchHost: "node1", Containers: map[string]slurm.ContainerStatus{
		"main": {Started: true}, "side": {Started: true}}}
	h.jobs.setState("uid-two", running)
	h.waitPhase(pod, corev1.PodRunning)
	one := running
	one.Containers = map[string]slurm.ContainerStatus{"main": {Started: true}, "side": {Started: true, Finished: true}}
	h.jobs.setState("uid-two", one)
	want := [][]string{{"uid-two", "side"}}
	h.waitFor("EndLogs of side", func() bool {
		h.jobs.mu.Lock()
		defer h.jobs.mu.Unlock()
		return slices.EqualFunc(h.jobs.endLogs, want, slices.Equal)
	})
	h.jobs.setState("uid-two", slurm.Status{State: slurm.StateUnknown, Reason: "found nowhere", Containers: one.Containers})
	want = append(want, []string{"uid-two"})
	h.waitFor("EndLogs of the whole job, found nowhere", func() bool {
		h.jobs.mu.Lock()
		defer h.jobs.mu.Unlock()
		return len(h.jobs.endLogs) > 1 && slices.Equal(h.jobs.endLogs[1], want[1])
	})
}
