package kubeletstream

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// Limits bound the streaming sessions open at once.
type Limits struct {
	// PerPod and PerNode bound the sessions of one pod and of the whole
	// node. If zero, 4 and 8. Each exec holds a session on the one login
	// connection, so PerNode stays within the login sshd's MaxSessions
	// (OpenSSH: 10).
	PerPod, PerNode int
}

func (l Limits) perPod() int {
	if l.PerPod <= 0 {
		return 4
	}
	return l.PerPod
}

func (l Limits) perNode() int {
	if l.PerNode <= 0 {
		return 8
	}
	return l.PerNode
}

// sessions counts the open sessions.
type sessions struct {
	mu    sync.Mutex
	pods  map[string]int
	total int
}

// errTooMany is the refusal of a session beyond a limit.
var errTooMany = errors.New("too many sessions")

func (s *sessions) acquire(l Limits, pod string) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.total >= l.perNode():
		return nil, fmt.Errorf("%w on this node (at most %d at once)", errTooMany, l.perNode())
	case s.pods[pod] >= l.perPod():
		return nil, fmt.Errorf("%w on pod %s (at most %d at once)", errTooMany, pod, l.perPod())
	}
	if s.pods == nil {
		s.pods = map[string]int{}
	}
	s.pods[pod]++
	s.total++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.total--
			if s.pods[pod]--; s.pods[pod] == 0 {
				delete(s.pods, pod)
			}
		})
	}, nil
}

// target is what a streaming request's path names.
type target struct {
	kind, namespace, pod, container string
}

// streamKinds are the first path segments of the streaming requests.
var streamKinds = map[string]bool{"exec": true, "attach": true, "portForward": true}

// parseTarget reads /exec/NS/POD/CONTAINER, /attach/NS/POD/CONTAINER and
// /portForward/NS/POD; ok is false for any other path.
func parseTarget(path string) (target, bool) {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(parts) < 3 || !streamKinds[parts[0]] || parts[1] == "" || parts[2] == "" {
		return target{}, false
	}
	t := target{kind: parts[0], namespace: parts[1], pod: parts[2]}
	switch {
	case t.kind == "portForward" && len(parts) == 3:
	case t.kind != "portForward" && len(parts) == 4 && parts[3] != "":
		t.container = parts[3]
	default:
		return target{}, false
	}
	return t, true
}

// Wrap serves the streaming requests of next only for pods whose job runs
// and within the limits (429 beyond them), and logs each session, its
// requesting user (request.UserFrom) and how long it lasted. That user is
// the API server's own identity, which opens every session for the
// kubectl user: who that was is in the API server's audit log. Other
// requests go to next as they are.
func (s *Server) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, ok := parseTarget(r.URL.Path)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		user := "unknown"
		if u, ok := request.UserFrom(r.Context()); ok {
			user = u.GetName()
		}
		log := s.log().With("session", t.kind, "pod", t.namespace+"/"+t.pod, "user", user)
		if t.container != "" {
			log = log.With("container", t.container)
		}
		if err := s.attachable(t, r); err != nil {
			log.Info("kubeletstream: session refused", "err", err)
			code := http.StatusNotImplemented
			if errors.Is(err, errNoStdin) {
				code = http.StatusBadRequest
			}
			http.Error(w, err.Error(), code)
			return
		}
		job, err := s.Jobs.RunningJob(t.namespace, t.pod)
		if err != nil {
			log.Info("kubeletstream: session refused", "err", err)
			http.Error(w, t.kind+": "+err.Error(), refusalStatus(err))
			return
		}
		release, err := s.sessions.acquire(s.Limits, t.namespace+"/"+t.pod)
		if err != nil {
			log.Warn("kubeletstream: session refused", "err", err)
			http.Error(w, t.kind+": "+err.Error(), http.StatusTooManyRequests)
			return
		}
		defer release()
		start := time.Now()
		log = log.With("job", job.Ref.JobID, "host", job.Host)
		log.Info("kubeletstream: session started", "command", commandName(r))
		next.ServeHTTP(w, r)
		log.Info("kubeletstream: session ended", "duration", time.Since(start).Round(time.Millisecond))
	})
}

// refusalStatus is the HTTP status of a session refused for err.
func refusalStatus(err error) int {
	switch {
	case errdefs.IsNotFound(err):
		return http.StatusNotFound
	case errors.Is(err, provider.ErrNotRunning):
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

// commandName is an exec's program, without its arguments (which may hold
// secrets), or "" for other sessions.
func commandName(r *http.Request) string {
	if cmd := r.URL.Query()["command"]; len(cmd) > 0 {
		return cmd[0]
	}
	return ""
}

// attachable refuses, before its streams are set up, an attach this server
// cannot serve: one with no Output, or one asking for stdin. Other
// sessions are nil.
func (s *Server) attachable(t target, r *http.Request) error {
	switch {
	case t.kind != "attach":
		return nil
	case s.Output == nil:
		return errNoAttach
	case r.FormValue("input") == "1": // the kubelet API's stdin=true
		return fmt.Errorf("attach: container %s: %w", t.container, errNoStdin)
	}
	return nil
}
