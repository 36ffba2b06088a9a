package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/salt"
	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// fakeJobs is a Slurm in memory: it records every call and answers from
// its maps.
type fakeJobs struct {
	mu          sync.Mutex
	submitErrs  []error // returned by the next Submit calls, in order
	cancelErrs  []error // returned by the next Cancel calls, in order
	jobs        map[string]slurm.JobID
	submits     int
	lastJob     *jobscript.Job
	statuses    map[string]slurm.Status // by UID
	statusCalls [][]slurm.JobRef
	cancels     []slurm.JobRef
	removes     []slurm.JobRef
	logs        map[string]string // by container
	logErrs     map[string]error  // what Logs returns instead, by container
	logOpts     []slurm.LogOptions
	endLogs     [][]string        // each EndLogs call: the uid, then the containers
	failures    map[string]string // FailureMessage, by UID
	nextID      int
	hang        map[string]bool   // Submit of these UIDs waits for its ctx to end
	salts       map[string]string // by UID: what Submit gave each reverse job
	// submitted are the annotations each job was submitted with, by UID,
	// as its job directory keeps them (Submitted)
	submitted map[string]map[string]string
}

var _ Jobs = (*fakeJobs)(nil)

func newFakeJobs() *fakeJobs {
	return &fakeJobs{jobs: map[string]slurm.JobID{}, statuses: map[string]slurm.Status{}, logs: map[string]string{}, nextID: 100}
}

func (f *fakeJobs) Submit(ctx context.Context, job *jobscript.Job) (slurm.JobID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hang[job.UID] {
		f.mu.Unlock()
		<-ctx.Done()
		f.mu.Lock()
		return "", ctx.Err()
	}
	f.submits++
	f.lastJob = job
	if len(f.submitErrs) > 0 {
		err := f.submitErrs[0]
		f.submitErrs = f.submitErrs[1:]
		return "", err
	}
	if job.Reverse != nil {
		// as slurm.Client does: drawn once, read back for an adopted job
		if f.salts == nil {
			f.salts = map[string]string{}
		}
		if f.salts[job.UID] == "" {
			f.salts[job.UID] = salt.New()
		}
		job.Reverse.Salt = f.salts[job.UID]
	}
	if id, ok := f.jobs[job.UID]; ok {
		return id, nil // adopted
	}
	if f.submitted == nil {
		f.submitted = map[string]map[string]string{}
	}
	f.submitted[job.UID] = maps.Clone(job.Annotations)
	f.nextID++
	id := slurm.JobID(fmt.Sprint(f.nextID))
	f.jobs[job.UID] = id
	f.statuses[job.UID] = slurm.Status{JobID: id, State: slurm.StatePending, Reason: "Priority"}
	return id, nil
}

func (f *fakeJobs) Submitted(_ context.Context, ref slurm.JobRef) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.submitted[ref.UID]), nil
}

func (f *fakeJobs) Status(_ context.Context, refs []slurm.JobRef) (map[string]slurm.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statusCalls = append(f.statusCalls, refs)
	out := map[string]slurm.Status{}
	for _, r := range refs {
		st, ok := f.statuses[r.UID]
		if !ok {
			st = slurm.Status{JobID: r.JobID, State: slurm.StateUnknown, Reason: "no such job"}
		}
		out[r.UID] = st
	}
	return out, nil
}

func (f *fakeJobs) Cancel(_ context.Context, ref slurm.JobRef) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancels = append(f.cancels, ref)
	if len(f.cancelErrs) > 0 {
		err := f.cancelErrs[0]
		f.cancelErrs = f.cancelErrs[1:]
		return err
	}
	return nil
}

func (f *fakeJobs) Remove(_ context.Context, ref slurm.JobRef) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removes = append(f.removes, ref)
	return nil
}

func (f *fakeJobs) Logs(_ context.Context, _ slurm.JobRef, container string, opts slurm.LogOptions) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logOpts = append(f.logOpts, opts)
	if err := f.logErrs[container]; err != nil {
		return nil, err
	}
	text, ok := f.logs[container]
	if !ok {
		return nil, fmt.Errorf("logs of container %s: %w", container, fs.ErrNotExist)
	}
	return io.NopCloser(strings.NewReader(text)), nil
}

func (f *fakeJobs) EndLogs(uid string, containers ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.endLogs = append(f.endLogs, append([]string{uid}, containers...))
}

func (f *fakeJobs) FailureMessage(_ context.Context, ref slurm.JobRef) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failures[ref.UID], nil
}

func (f *fakeJobs) Ref(namespace, uid string, id slurm.JobID) slurm.JobRef {
	return slurm.JobRef{UID: uid, JobID: id, Dir: jobscript.JobDir("/data", namespace, uid)}
}

func (f *fakeJobs) setState(uid string, st slurm.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st.JobID = f.jobs[uid]
	f.statuses[uid] = st
}

func (f *fakeJobs) counts() (submits, statusCalls, cancels, removes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.submits, len(f.statusCalls), len(f.cancels), len(f.removes)
}

// harness runs a provider against fakes.
type harness struct {
	t        *testing.T
	p        *Provider
	jobs     *fakeJobs
	client   *fake.Clientset
	indexer  cache.Indexer
	recorder *record.FakeRecorder

	mu     sync.Mutex
	pushed map[string]*corev1.Pod // last pushed, by namespace/name
	// firstFailed is the first push of each pod in phase Failed: the
	// virtual kubelet sends the API server no status after that one.
	firstFailed map[string]*corev1.Pod
	events      []string
}

func newHarness(t *testing.T, edit func(*Config), objects ...*corev1.Pod) *harness {
	t.Helper()
	h := &harness{t: t, jobs: newFakeJobs(), recorder: record.NewFakeRecorder(1000), pushed: map[string]*corev1.Pod{}, firstFailed: map[string]*corev1.Pod{}}
	h.indexer = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	h.client = fake.NewClientset()
	for _, pod := range objects {
		h.addPod(pod)
	}
	cfg := Config{
		NodeName: "hpc", Jobs: h.jobs, Runtime: jobscript.RuntimeCharliecloud,
		Client: h.client, Pods: corev1listers.NewPodLister(h.indexer), Recorder: h.recorder,
		InternalIP: "10.0.0.9", PollInterval: 5 * time.Millisecond, Backoff: time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)),
	}
	if edit != nil {
		edit(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.p = p
	p.NotifyPods(context.Background(), func(pod *corev1.Pod) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.pushed[keyOf(pod)] = pod
		if _, seen := h.firstFailed[keyOf(pod)]; !seen && pod.Status.Phase == corev1.PodFailed {
			h.firstFailed[keyOf(pod)] = pod
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return h
}

// addPod puts a pod in both the API server and the pod controller's cache.
func (h *harness) addPod(pod *corev1.Pod) {
	h.t.Helper()
	if _, err := h.client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		h.t.Fatalf("create pod: %v", err)
	}
	if err := h.indexer.Add(pod.DeepCopy()); err != nil {
		h.t.Fatalf("index pod: %v", err)
	}
}

// markDeleted sets a deletion timestamp on the cached pod.
func (h *harness) markDeleted(pod *corev1.Pod) {
	h.t.Helper()
	cur, err := h.client.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("get pod: %v", err)
	}
	now := metav1.Now()
	cur.DeletionTimestamp = &now
	if err := h.indexer.Update(cur); err != nil {
		h.t.Fatalf("index pod: %v", err)
	}
}

// last is the pod last pushed, or nil.
func (h *harness) last(pod *corev1.Pod) *corev1.Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pushed[keyOf(pod)]
}

// waitFor polls cond until it holds or 5s pass.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitPhase waits until the pod is pushed in phase.
func (h *harness) waitPhase(pod *corev1.Pod, phase corev1.PodPhase) *corev1.Pod {
	h.t.Helper()
	h.waitFor(fmt.Sprintf("pod %s in phase %s", pod.Name, phase), func() bool {
		got := h.last(pod)
		return got != nil && got.Status.Phase == phase
	})
	return h.last(pod)
}

// waitEvent waits for an Event whose text contains want.
// drainEvents moves what the recorder holds into h.events.
func (h *harness) drainEvents() {
	for {
		select {
		case e := <-h.recorder.Events:
			h.mu.Lock()
			h.events = append(h.events, e)
			h.mu.Unlock()
		default:
			return
		}
	}
}

func (h *harness) waitEvent(want string) {
	h.t.Helper()
	h.waitFor("event "+want, func() bool {
		h.drainEvents()
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, e := range h.events {
			if strings.Contains(e, want) {
				return true
			}
		}
		return false
	})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", strings.TrimSpace(string(p)))
	return len(p), nil
}

var errSite = errors.New("connection to the site lost")

// testPod is a pod bound to the node with one container.
func testPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			NodeName:      "hpc",
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "main", Image: "/images/busybox", Command: []string{"sh", "-c", "echo hi"},
			}},
		},
	}
}
