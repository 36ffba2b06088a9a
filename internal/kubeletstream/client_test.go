package kubeletstream

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
)

// kubeletAPI serves s's streams as sluice-vk does (the API server's
// authorisation left out), on a plain-HTTP test server.
func kubeletAPI(t testing.TB, s *Server) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(s.Wrap(http.NotFoundHandler()))
	t.Cleanup(srv.Close)
	return srv
}

// forwardConn is a SPDY port-forward connection to pod ns/pod, as kubectl
// port-forward opens it.
func forwardConn(t testing.TB, srv *httptest.Server, ns, pod string) httpstream.Connection {
	t.Helper()
	rt, upgrader, err := spdy.RoundTripperFor(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/portForward/"+ns+"/"+pod, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, _, err := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, req.URL).Dial("portforward.k8s.io")
	if err != nil {
		t.Fatalf("port-forward upgrade: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// forwardStream opens the error and data streams of one forwarded
// connection to port, as kubectl does for each connection it accepts;
// errs gets what the server writes on the error stream.
func forwardStream(t testing.TB, conn httpstream.Connection, id, port int) (data httpstream.Stream, errs <-chan string) {
	t.Helper()
	data, errs, err := tryForwardStream(conn, id, port)
	if err != nil {
		t.Fatal(err)
	}
	return data, errs
}

// tryForwardStream is forwardStream, failing when the server reset a
// stream it refused before it was made.
func tryForwardStream(conn httpstream.Connection, id, port int) (data httpstream.Stream, errs <-chan string, err error) {
	h := http.Header{}
	h.Set(corev1.StreamType, corev1.StreamTypeError)
	h.Set(corev1.PortHeader, strconv.Itoa(port))
	h.Set(corev1.PortForwardRequestIDHeader, strconv.Itoa(id))
	es, err := conn.CreateStream(h)
	if err != nil {
		return nil, nil, fmt.Errorf("error stream: %w", err)
	}
	es.Close() // kubectl writes nothing on it
	c := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(es)
		c <- string(b)
	}()
	h.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err = conn.CreateStream(h)
	if err != nil {
		return nil, nil, fmt.Errorf("data stream: %w", err)
	}
	return data, c, nil
}

// wantMessage waits up to d for a message on errs that holds want.
func wantMessage(t testing.TB, errs <-chan string, want string, d time.Duration) {
	t.Helper()
	select {
	case msg := <-errs:
		if !strings.Contains(msg, want) {
			t.Errorf("the error stream said %q; want %q", msg, want)
		}
	case <-time.After(d):
		t.Errorf("nothing on the error stream within %v; want %q", d, want)
	}
}

// attachSession attaches to ns/pod's container main, as kubectl attach
// does, until ctx ends; it returns the session's end.
func attachSession(ctx context.Context, t testing.TB, srv *httptest.Server, ns, pod string) <-chan error {
	t.Helper()
	return streamSession(ctx, t, srv, "/attach/"+ns+"/"+pod+"/main?output=1", remotecommand.StreamOptions{Stdout: io.Discard})
}

// streamSession runs a remote command session (exec, attach) at path.
func streamSession(ctx context.Context, t testing.TB, srv *httptest.Server, path string, opts remotecommand.StreamOptions) <-chan error {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := remotecommand.NewSPDYExecutor(&rest.Config{Host: srv.URL}, http.MethodPost, req.URL)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ex.StreamWithContext(ctx, opts) }()
	return done
}
