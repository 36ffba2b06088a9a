package kubeletstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	"k8s.io/apiserver/pkg/endpoints/request"
)

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

// Wrap serves the streaming requests (exec, attach, port-forward) itself,
// and passes other requests to next as they are. It serves a session only
// for a pod whose job runs and within the Limits (429 beyond them), each
// kind counted apart and a namespace within its share of the node; it logs
// each session, its requesting user (request.UserFrom) and how long it
// lasted. That user is the API server's own identity, which opens every
// session for the kubectl user: who that was is in the API server's audit
// log. A port-forward stream ends with its session's connection; a session
// whose client stops reading is closed after Limits.Stall.
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
			log.Info("kubeletstream: session refused", "error", err)
			code := http.StatusNotImplemented
			if errors.Is(err, errNoStdin) {
				code = http.StatusBadRequest
			}
			http.Error(w, err.Error(), code)
			return
		}
		job, err := s.Jobs.RunningJob(t.namespace, t.pod)
		if err != nil {
			log.Info("kubeletstream: session refused", "error", err)
			http.Error(w, t.kind+": "+err.Error(), refusalStatus(err))
			return
		}
		release, err := s.pool(t.kind).acquire(s.Limits.sessions(), t.namespace, t.pod)
		if err != nil {
			log.Warn("kubeletstream: session refused", "error", err)
			http.Error(w, t.kind+": "+err.Error(), http.StatusTooManyRequests)
			return
		}
		defer release()
		ctx, end := context.WithCancelCause(r.Context())
		defer end(nil)
		start := time.Now()
		log = log.With("job", job.Ref.JobID, "host", job.Host)
		log.Info("kubeletstream: session started", "command", commandName(r))
		ww := &watchedWriter{ResponseWriter: w, stall: s.Limits.stall(), end: end}
		s.serve(t, ctx).ServeHTTP(ww, r.WithContext(ctx))
		ww.close()
		attrs := []any{"duration", time.Since(start).Round(time.Millisecond)}
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			attrs = append(attrs, "cause", cause)
		}
		log.Info("kubeletstream: session ended", attrs...)
	})
}

// serve is the handler of one session of t: virtual-kubelet's, given the
// session's target and timeouts, and for port-forward the session's
// context, which it does not give the streams itself.
func (s *Server) serve(t target, session context.Context) http.Handler {
	execOpts := []api.ContainerExecHandlerOption{
		api.WithExecStreamCreationTimeout(s.Limits.creation()),
		api.WithExecStreamIdleTimeout(s.Limits.idle()),
	}
	switch t.kind {
	case "exec":
		return api.HandleContainerExec(func(ctx context.Context, _, _, _ string, cmd []string, attach api.AttachIO) error {
			return s.Exec(ctx, t.namespace, t.pod, t.container, cmd, attach)
		}, execOpts...)
	case "attach":
		return api.HandleContainerAttach(func(ctx context.Context, _, _, _ string, attach api.AttachIO) error {
			return s.Attach(ctx, t.namespace, t.pod, t.container, attach)
		}, execOpts...)
	}
	fs := &forwardSession{ctx: session}
	return api.HandlePortForward(func(_ context.Context, _, _ string, port int32, stream io.ReadWriteCloser) error {
		return s.forwardInSession(fs, t.namespace, t.pod, port, stream)
	}, api.WithPortForwardCreationTimeout(s.Limits.creation()), api.WithPortForwardStreamIdleTimeout(s.Limits.idle()))
}

// pool is the count of the sessions of kind.
func (s *Server) pool(kind string) *pool {
	switch kind {
	case "exec":
		return &s.execs
	case "attach":
		return &s.attaches
	}
	return &s.forwards
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
