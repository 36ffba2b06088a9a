package kubeletstream

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/sluice-hpc/sluice/internal/slurm"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
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

func TestSessionLimits(t *testing.T) {
	var s sessions
	l := Limits{PerPod: 2, PerNode: 3}
	r1, err1 := s.acquire(l, "ns/a")
	_, err2 := s.acquire(l, "ns/a")
	_, err3 := s.acquire(l, "ns/a")
	if err1 != nil || err2 != nil || !errors.Is(err3, errTooMany) {
		t.Fatalf("got %v, %v, %v; want two sessions on ns/a and the third refused", err1, err2, err3)
	}
	if _, err := s.acquire(l, "ns/b"); err != nil {
		t.Fatalf("got %v; want a session on ns/b", err)
	}
	if _, err := s.acquire(l, "ns/c"); !errors.Is(err, errTooMany) || !strings.Contains(err.Error(), "node") {
		t.Fatalf("got %v; want the node's limit", err)
	}
	r1()
	r1() // a second release does nothing
	if _, err := s.acquire(l, "ns/c"); err != nil {
		t.Fatalf("got %v after a release; want a session", err)
	}
	if _, err := s.acquire(l, "ns/d"); !errors.Is(err, errTooMany) {
		t.Fatalf("got %v; want the node's limit again (one release freed one place)", err)
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
	var logs bytes.Buffer
	block := make(chan struct{})
	entered := make(chan struct{}, 4)
	s := &Server{
		Jobs:   fakeJobs{"ns/run": nil, "ns/pending": fmt.Errorf("pod ns/pending: %w", provider.ErrNotRunning)},
		Limits: Limits{PerPod: 1, PerNode: 1},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	}
	h := s.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/portForward/") {
			entered <- struct{}{}
			<-block
		}
		w.WriteHeader(http.StatusNoContent)
	}))
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
	s.Output = fakeOutput{}
	if w := do("/attach/ns/run/main?input=1&output=1"); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "no stdin to attach to") {
		t.Errorf("got %d %q for attach -i; want 400 saying the container has no stdin", w.Code, w.Body)
	}
	if w := do("/attach/ns/run/main?output=1&error=1"); w.Code != http.StatusNoContent {
		t.Errorf("got %d %q for attach to the output; want it passed on", w.Code, w.Body)
	}
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- do("/portForward/ns/run") }()
	<-entered
	if w := do("/exec/ns/run/main?command=sh&command=-c"); w.Code != http.StatusTooManyRequests {
		t.Errorf("got %d for a session beyond the limit; want 429", w.Code)
	}
	close(block)
	if w := <-done; w.Code != http.StatusNoContent {
		t.Errorf("got %d; want the session served", w.Code)
	}
	for _, want := range []string{
		`msg="kubeletstream: session started" session=portForward pod=ns/run user=kube-apiserver job=7 host=node1`,
		`msg="kubeletstream: session ended" session=portForward pod=ns/run user=kube-apiserver`,
		`msg="kubeletstream: session refused" session=exec pod=ns/run user=kube-apiserver container=main err="too many sessions`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}
