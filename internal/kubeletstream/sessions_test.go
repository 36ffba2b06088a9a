package kubeletstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/sluice-hpc/sluice/internal/slurm"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
)

func TestParseTarget(t *testing.T) {
	for _, c := range []struct {
		path string
		want target
		ok   bool
	}{
		{"/portForward/ns/pod", target{kind: "portForward", namespace: "ns", pod: "pod"}, true},
		{"/exec/ns/pod/main", target{kind: "exec", namespace: "ns", pod: "pod", container: "main"}, true},
		{"/attach/ns/pod/main", target{kind: "attach", namespace: "ns", pod: "pod", container: "main"}, true},
		{"/exec/ns/pod", target{}, false},
		{"/exec/ns/pod/", target{}, false},
		{"/portForward/ns/pod/extra", target{}, false},
		{"/portForward/ns/", target{}, false},
		{"/containerLogs/ns/pod/main", target{}, false},
		{"/pods", target{}, false},
		{"", target{}, false},
	} {
		got, ok := parseTarget(c.path)
		if got != c.want || ok != c.ok {
			t.Errorf("parseTarget(%q) = %+v, %v; want %+v, %v", c.path, got, ok, c.want, c.ok)
		}
	}
}

func FuzzParseTarget(f *testing.F) {
	for _, p := range []string{"/exec/ns/pod/c", "/portForward/a/b", "//", "/attach/x/y/z/w"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, path string) {
		got, ok := parseTarget(path)
		if !ok {
			return
		}
		if !streamKinds[got.kind] || got.namespace == "" || got.pod == "" || strings.Contains(got.pod, "/") {
			t.Errorf("parseTarget(%q) = %+v accepted", path, got)
		}
		if (got.kind == "portForward") != (got.container == "") {
			t.Errorf("parseTarget(%q) = %+v: container only for exec and attach", path, got)
		}
	})
}

func TestPoolBounds(t *testing.T) {
	var p pool
	c := caps{what: "things", pod: 2, namespace: 3, node: 4}
	r1, err1 := p.acquire(c, "a", "p")
	_, err2 := p.acquire(c, "a", "p")
	_, err3 := p.acquire(c, "a", "p")
	if err1 != nil || err2 != nil || !errors.Is(err3, errTooMany) || !strings.Contains(err3.Error(), "too many things on pod a/p") {
		t.Fatalf("got %v, %v, %v; want two on a/p and the third refused", err1, err2, err3)
	}
	if _, err := p.acquire(c, "a", "q"); err != nil {
		t.Fatalf("got %v; want one on a/q", err)
	}
	if _, err := p.acquire(c, "a", "r"); !errors.Is(err, errTooMany) || !strings.Contains(err.Error(), "namespace a (its share of this node: 3") {
		t.Fatalf("got %v; want namespace a's share", err)
	}
	if _, err := p.acquire(c, "b", "p"); err != nil {
		t.Fatalf("got %v; want one on b/p: namespace b has its share", err)
	}
	if _, err := p.acquire(c, "c", "p"); !errors.Is(err, errTooMany) || !strings.Contains(err.Error(), "on this node (at most 4") {
		t.Fatalf("got %v; want the node's bound", err)
	}
	r1()
	r1() // a second release does nothing
	if _, err := p.acquire(c, "c", "p"); err != nil {
		t.Fatalf("got %v after a release; want one", err)
	}
	if _, err := p.acquire(c, "d", "p"); !errors.Is(err, errTooMany) {
		t.Fatalf("got %v; want the node's bound again (one release freed one place)", err)
	}
}

func TestLimitsShares(t *testing.T) {
	if got := (Limits{}).sessions(); got.pod != 4 || got.namespace != 4 || got.node != 8 {
		t.Errorf("default sessions %+v; want 4 a pod, 4 a namespace, 8 the node", got)
	}
	if got := (Limits{PerPod: 1, PerNode: 3}).sessions(); got.namespace != 2 {
		t.Errorf("a namespace's share of 3 is %d; want 2", got.namespace)
	}
	if got := (Limits{Confined: true}).sessions(); got.namespace != 8 {
		t.Errorf("a confined node's namespace may hold %d; want the node's 8", got.namespace)
	}
	if got := (Limits{}).streams(); got.node != streamsPerNode || got.namespace != streamsPerNode/2 {
		t.Errorf("streams %+v; want a namespace at half the node", got)
	}
	if got := (Limits{}).creation(); got != 30*time.Second {
		t.Errorf("stream creation timeout %v; want a kubelet's 30s", got)
	}
}

// fakeJobs answers RunningJob from a map; a pod not in it is not found.
type fakeJobs map[string]error

func (f fakeJobs) RunningJob(namespace, name string) (provider.RunningJob, error) {
	err, ok := f[namespace+"/"+name]
	if !ok {
		return provider.RunningJob{}, errdefs.NotFoundf("pod %s/%s is not on this node", namespace, name)
	}
	if err != nil {
		return provider.RunningJob{}, err
	}
	return provider.RunningJob{Ref: slurm.JobRef{JobID: "7"}, Host: "node1"}, nil
}

func TestWrapRefusesAndLogsWithTheUser(t *testing.T) {
	var logs lockedBuffer
	s := &Server{
		Jobs:   fakeJobs{"ns/run": nil, "ns/pending": fmt.Errorf("pod ns/pending: %w", provider.ErrNotRunning)},
		Limits: Limits{PerPod: 1, PerNode: 1},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h := s.Wrap(next)
	do := func(path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, path, nil)
		req = req.WithContext(request.WithUser(req.Context(), &user.DefaultInfo{Name: "kube-apiserver"}))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	if w := do("/pods"); w.Code != http.StatusNoContent {
		t.Errorf("got %d for /pods; want it passed on", w.Code)
	}
	if w := do("/portForward/ns/gone"); w.Code != http.StatusNotFound {
		t.Errorf("got %d for a pod not on the node; want 404", w.Code)
	}
	if w := do("/exec/ns/pending/main?command=sh"); w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "not running") {
		t.Errorf("got %d %q for a pending pod; want 409 saying it is not running", w.Code, w.Body)
	}
	if w := do("/attach/ns/run/main"); w.Code != http.StatusNotImplemented || !strings.Contains(w.Body.String(), "kubectl logs -f") {
		t.Errorf("got %d %q for attach without Output; want 501 saying what to use instead", w.Code, w.Body)
	}
	s.Output = blockingOutput{}
	if w := do("/attach/ns/run/main?input=1&output=1"); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "no stdin to attach to") {
		t.Errorf("got %d %q for attach -i; want 400 saying the container has no stdin", w.Code, w.Body)
	}

	srv := httptest.NewServer(withUser("kube-apiserver", h))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	attached := attachSession(ctx, t, srv, "ns", "run")
	if !waitFor(10*time.Second, func() bool { return strings.Contains(logs.String(), "session started") }) {
		t.Fatalf("the attach did not start: %s", logs.String())
	}
	if w := do("/attach/ns/run/main?output=1"); w.Code != http.StatusTooManyRequests {
		t.Errorf("got %d for a session beyond the limit; want 429", w.Code)
	}
	cancel()
	<-attached
	if !waitFor(10*time.Second, func() bool { return strings.Contains(logs.String(), "session ended") }) {
		t.Error("the attach did not end after kubectl went away")
	}
	for _, want := range []string{
		`msg="kubeletstream: session started" session=attach pod=ns/run user=kube-apiserver container=main job=7 host=node1`,
		`msg="kubeletstream: session ended" session=attach pod=ns/run user=kube-apiserver container=main`,
		`msg="kubeletstream: session refused" session=attach pod=ns/run user=kube-apiserver container=main error="too many sessions`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

// lockedBuffer is a bytes.Buffer for logs written by the server's
// goroutines while the test reads them.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// withUser puts user into each request's context, as sluice-vk's
// authentication does.
func withUser(name string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), &user.DefaultInfo{Name: name})))
	})
}

// TestSessionKindsAndShares: attach is counted apart from exec (an
// attach open leaves exec its places), and a namespace holds at most its
// share of the node's sessions of a kind.
func TestSessionKindsAndShares(t *testing.T) {
	s, _ := execServer(t)
	s.Output = blockingOutput{}
	s.Limits = Limits{PerPod: 1, PerNode: 2}
	srv := kubeletAPI(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	attachSession(ctx, t, srv, "a", "p")
	time.Sleep(500 * time.Millisecond)
	var out bytes.Buffer
	err := <-streamSession(ctx, t, srv, "/exec/a/p/main?command=echo&command=hi&output=1", remotecommand.StreamOptions{Stdout: &out})
	if err != nil || out.String() != "hi\n" {
		t.Errorf("exec while an attach is open on the pod: %q, %v; want it run", out.String(), err)
	}
	err = <-attachSession(ctx, t, srv, "a", "q")
	if err == nil || !strings.Contains(err.Error(), "namespace a") {
		t.Errorf("a second attach in namespace a, its share of 2 being 1: %v; want it refused naming the namespace", err)
	}
	b := attachSession(ctx, t, srv, "b", "p")
	select {
	case err := <-b:
		t.Errorf("an attach in namespace b ended with %v; want it served", err)
	case <-time.After(time.Second):
	}
}

// TestStreamCreationTimeout: a session whose streams do not come within
// Limits.Creation is ended, as a kubelet ends it after 30s (before, 4h).
func TestStreamCreationTimeout(t *testing.T) {
	s, _ := execServer(t)
	s.Limits = Limits{Creation: 300 * time.Millisecond}
	srv := kubeletAPI(t, s)
	rt, upgrader, err := spdy.RoundTripperFor(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/exec/ns/pod/main?command=true&output=1", nil)
	conn, _, err := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, req.URL).Dial("v4.channel.k8s.io")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	select {
	case <-conn.CloseChan():
	case <-time.After(10 * time.Second):
		t.Fatal("a session that opened no stream was still open 10s after its upgrade")
	}
}
