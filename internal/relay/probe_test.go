package relay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseProbeTarget(t *testing.T) {
	for _, tc := range []struct {
		in, addr, uri, bad string
	}{
		{in: "tcp://127.0.0.1:6379", addr: "127.0.0.1:6379", uri: "/"},
		{in: "http://127.0.0.1:8080/healthz?x=1", addr: "127.0.0.1:8080", uri: "/healthz?x=1"},
		{in: "http://localhost/", addr: "127.0.0.1:80", uri: "/"},
		{in: "https://[::1]:8443/ready", addr: "[::1]:8443", uri: "/ready"},
		{in: "http://127.4.5.6:1/", addr: "127.4.5.6:1", uri: "/"},
		{in: "http://10.0.0.1:80/", bad: "not a loopback address"},
		{in: "http://example.org/", bad: "not a loopback address"},
		{in: "http://[fe80::1%25eth0]:80/", bad: "not a loopback address"},
		{in: "ftp://127.0.0.1:21", bad: "scheme"},
		{in: "tcp://127.0.0.1", bad: "port"},
		{in: "tcp://127.0.0.1:0", bad: "port"},
		{in: "tcp://127.0.0.1:70000", bad: "port"},
		{in: "tcp://127.0.0.1:80/x", bad: "want SCHEME"},
		{in: "http://u:p@127.0.0.1:80/", bad: "want SCHEME"},
	} {
		got, err := parseProbeTarget(tc.in)
		if tc.bad != "" {
			if err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("parseProbeTarget(%q): got %+v, %v; want an error saying %q", tc.in, got, err, tc.bad)
			}
			continue
		}
		if err != nil || got.addr.String() != tc.addr || (got.scheme != "tcp" && got.uri != tc.uri) {
			t.Errorf("parseProbeTarget(%q): got %v %q, %v; want %s %q", tc.in, got.addr, got.uri, err, tc.addr, tc.uri)
		}
	}
}

func TestStatusCode(t *testing.T) {
	for _, tc := range []struct {
		line string
		code int
		ok   bool
	}{
		{"HTTP/1.1 200 OK\r\n", 200, true},
		{"HTTP/1.0 302 Found\r\n", 302, true},
		{"HTTP/1.1 503\r\n", 503, true},
		{"HTTP/2 200\r\n", 0, false},
		{"SSH-2.0-OpenSSH\r\n", 0, false},
		{"HTTP/1.1 20 OK\r\n", 0, false},
		{"HTTP/1.1 abc OK\r\n", 0, false},
	} {
		code, err := statusCode(tc.line)
		if (err == nil) != tc.ok || code != tc.code {
			t.Errorf("statusCode(%q): got %d, %v; want %d (ok %v)", tc.line, code, err, tc.code, tc.ok)
		}
	}
}

func TestSplitHeader(t *testing.T) {
	for _, h := range []string{"X-Token: abc", "Host: example.org", "Accept:*/*"} {
		if _, _, err := splitHeader(h); err != nil {
			t.Errorf("splitHeader(%q): %v", h, err)
		}
	}
	for _, h := range []string{"X-Token", ": abc", "X Token: a", "X-Token: a\r\nEvil: b", "X-Token: \x00"} {
		if _, _, err := splitHeader(h); err == nil {
			t.Errorf("splitHeader(%q): got no error", h)
		}
	}
}

// serveHTTP answers every request on a fresh loopback listener of this
// process's user with status, and sends the request's lines to got.
func serveHTTP(t *testing.T, status int, got chan<- []string) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r := bufio.NewReader(c)
			var lines []string
			for {
				l, err := r.ReadString('\n')
				if err != nil || l == "\r\n" {
					break
				}
				lines = append(lines, strings.TrimRight(l, "\r\n"))
			}
			fmt.Fprintf(c, "HTTP/1.1 %d X\r\nContent-Length: 0\r\n\r\n", status)
			c.Close()
			if got != nil {
				got <- lines
			}
		}
	}()
	return ln.Addr().String()
}

// TestProbeOwner: the job user's listener answers the check; for a job of
// another uid the same listener is refused, naming its owner.
func TestProbeOwner(t *testing.T) {
	me := uint32(os.Getuid())
	got := make(chan []string, 1)
	addr := serveHTTP(t, 204, got)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := &Probe{Target: "http://" + addr + "/ready", Headers: []string{"X-Token: abc", "user-agent: kube-probe/1.33"}, UID: me}
	if err := p.Run(ctx); err != nil {
		t.Fatalf("probe of the job's own listener: %v", err)
	}
	lines := <-got
	want := []string{"GET /ready HTTP/1.1", "Host: " + addr, "Accept: */*", "X-Token: abc", "user-agent: kube-probe/1.33", "Connection: close"}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("request: got %q; want %q", lines, want)
	}
	other := &Probe{Target: "tcp://" + addr, UID: me + 1}
	err := other.Run(ctx)
	var perr *ProbeError
	if !errors.As(err, &perr) || !strings.Contains(perr.Reason, fmt.Sprintf("not the job's uid %d", me+1)) {
		t.Errorf("probe of another uid's listener: got %v; want a *ProbeError naming the owner", err)
	}
	<-got // the refused connection reached the server, which answered nothing that was read
}

func TestProbeStatus(t *testing.T) {
	addr := serveHTTP(t, 500, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := (&Probe{Target: "http://" + addr + "/", UID: uint32(os.Getuid())}).Run(ctx)
	var perr *ProbeError
	if err == nil || errors.As(err, &perr) || !strings.Contains(err.Error(), "status 500") {
		t.Errorf("probe answered 500: got %v; want a failure saying status 500", err)
	}
}

func TestProbeNothingListens(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	err = (&Probe{Target: "tcp://" + addr, UID: uint32(os.Getuid())}).Run(context.Background())
	var perr *ProbeError
	if !errors.As(err, &perr) {
		t.Errorf("probe of a closed port: got %v; want a *ProbeError", err)
	}
}
