package socks

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/proxy"
)

// tcpForward is the dialer the SOCKS5 client reaches the server with; it
// keeps the TCP connection, whose write side the test closes alone (the
// client's own connection type does not offer CloseWrite).
type tcpForward struct {
	mu    sync.Mutex
	conns []*net.TCPConn
}

func (f *tcpForward) Dial(network, addr string) (net.Conn, error) {
	return f.DialContext(context.Background(), network, addr)
}

func (f *tcpForward) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.conns = append(f.conns, c.(*net.TCPConn))
	return c, nil
}

func (f *tcpForward) last() *net.TCPConn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conns[len(f.conns)-1]
}

// socksClient is golang.org/x/net/proxy's SOCKS5 client for the server at
// addr.
func socksClient(t *testing.T, addr string) (proxy.ContextDialer, *tcpForward) {
	t.Helper()
	fwd := &tcpForward{}
	d, err := proxy.SOCKS5("tcp", addr, nil, fwd)
	if err != nil {
		t.Fatalf("socks5 client: %v", err)
	}
	return d.(proxy.ContextDialer), fwd
}

// roundTrip sends 1 MiB through c, half-closes, and reads the sink's copy
// back until EOF.
func roundTrip(t *testing.T, c net.Conn, tcp *net.TCPConn) {
	t.Helper()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	data := make([]byte, 1<<20)
	rand.Read(data)
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		if err == nil {
			err = tcp.CloseWrite()
		}
		werr <- err
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	if err := <-werr; err != nil {
		t.Fatalf("write: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes; want the %d sent", len(got), len(data))
	}
}

// TestConnectThroughXNetProxy carries 1 MiB each way, with a half-close
// each way, to IPv4, IPv6 and named destinations, with x/net/proxy's
// SOCKS5 client.
func TestConnectThroughXNetProxy(t *testing.T) {
	sink4 := startSink(t, "tcp4")
	_, port4, _ := net.SplitHostPort(sink4.Addr().String())
	tests := []struct {
		name    string
		network string
		dest    func(sink net.Listener) string
		want    func(sink net.Listener) Request
	}{
		{"ipv4", "tcp4",
			func(sink net.Listener) string { return sink.Addr().String() },
			func(sink net.Listener) Request {
				ap := sink.Addr().(*net.TCPAddr).AddrPort()
				return Request{Command: CmdConnect, Addr: ap.Addr(), Port: ap.Port()}
			}},
		{"ipv6", "tcp6",
			func(sink net.Listener) string { return sink.Addr().String() },
			func(sink net.Listener) Request {
				ap := sink.Addr().(*net.TCPAddr).AddrPort()
				return Request{Command: CmdConnect, Addr: ap.Addr(), Port: ap.Port()}
			}},
		{"name", "tcp4",
			func(net.Listener) string { return "sink.cluster.test:" + port4 },
			func(sink net.Listener) Request {
				return Request{Command: CmdConnect, Name: "sink.cluster.test", Port: sink.Addr().(*net.TCPAddr).AddrPort().Port()}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := sink4
			if tt.network != "tcp4" {
				sink = startSink(t, tt.network)
			}
			var mu sync.Mutex
			var got *Request
			var results []Result
			s := &Server{
				Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
					// the cluster's resolver, in short
					addr = strings.Replace(addr, "sink.cluster.test", "127.0.0.1", 1)
					var d net.Dialer
					return d.DialContext(ctx, network, addr)
				},
				OnConnect: func(req *Request) {
					mu.Lock()
					defer mu.Unlock()
					got = req
				},
				OnDone: func(r Result) {
					mu.Lock()
					defer mu.Unlock()
					results = append(results, r)
				},
			}
			addr := startServer(t, s)
			client, fwd := socksClient(t, addr)
			c, err := client.DialContext(context.Background(), "tcp", tt.dest(sink))
			if err != nil {
				t.Fatalf("dial through the proxy: %v", err)
			}
			defer c.Close()
			roundTrip(t, c, fwd.last())
			c.Close()

			waitFor(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(results) == 1
			})
			mu.Lock()
			defer mu.Unlock()
			if want := tt.want(sink); got == nil || *got != want {
				t.Errorf("request: got %+v; want %+v", got, want)
			}
			r := results[0]
			if r.Err != nil || r.Sent != 1<<20 || r.Received != 1<<20 {
				t.Errorf("result: got %d sent, %d received, error %v; want 1 MiB both ways and no error", r.Sent, r.Received, r.Err)
			}
		})
	}
}

// waitFor polls cond until it holds, for at most 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestConnectRefused dials a port that refuses through the proxy: the
// client is told the connection was refused.
func TestConnectRefused(t *testing.T) {
	addr := startServer(t, &Server{})
	client, _ := socksClient(t, addr)
	c, err := client.DialContext(context.Background(), "tcp", refusingAddr(t))
	if err == nil {
		c.Close()
		t.Fatal("dial through the proxy: got a connection; want it refused")
	}
	if !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("got %v; want connection refused", err)
	}
}

// TestDialErrorReplies checks the reply byte for each kind of dial error,
// with a raw client.
func TestDialErrorReplies(t *testing.T) {
	for _, tt := range dialErrors {
		t.Run(tt.name, func(t *testing.T) {
			s := &Server{Dial: func(context.Context, string, string) (net.Conn, error) { return nil, tt.err }}
			c := dialRaw(t, startServer(t, s))
			c.Write([]byte{5, 1, 0})
			c.Write([]byte{5, 1, 0, 1, 10, 0, 0, 1, 0, 80})
			want := []byte{5, 0, 5, byte(tt.reply), 0, 1, 0, 0, 0, 0, 0, 0}
			if got := readToEOF(t, c); !bytes.Equal(got, want) {
				t.Errorf("got % x; want % x", got, want)
			}
		})
	}
}

// TestRefusedRequests checks, byte by byte with a raw client, what the
// server answers to what it does not serve, and that it dials nothing.
func TestRefusedRequests(t *testing.T) {
	noAuth := []byte{5, 1, 0}
	failure := func(r Reply) []byte { return []byte{5, byte(r), 0, 1, 0, 0, 0, 0, 0, 0} }
	tests := []struct {
		name  string
		send  []byte
		want  []byte
		stage Stage
	}{
		{"no acceptable method", []byte{5, 2, 1, 2}, []byte{5, 0xff}, StageGreeting},
		{"no method", []byte{5, 0}, []byte{5, 0xff}, StageGreeting},
		{"no acceptable method, request sent along", []byte{5, 1, 2, 5, 1, 0, 1, 10, 0, 0, 1, 0, 80}, []byte{5, 0xff}, StageGreeting},
		{"socks4 greeting", []byte{4, 1, 0, 80, 10, 0, 0, 1, 0}, nil, StageGreeting},
		{"bind", append(noAuth, 5, 2, 0, 1, 10, 0, 0, 1, 0, 80),
			append([]byte{5, 0}, failure(ReplyCommandNotSupported)...), StageRequest},
		{"udp associate", append(noAuth, 5, 3, 0, 1, 0, 0, 0, 0, 0, 53),
			append([]byte{5, 0}, failure(ReplyCommandNotSupported)...), StageRequest},
		{"unknown command", append(noAuth, 5, 0x7f, 0, 1, 10, 0, 0, 1, 0, 80),
			append([]byte{5, 0}, failure(ReplyCommandNotSupported)...), StageRequest},
		{"address type 2", append(noAuth, 5, 1, 0, 2, 10, 0, 0, 1, 0, 80),
			append([]byte{5, 0}, failure(ReplyAddressNotSupported)...), StageRequest},
		{"bad host name", append(noAuth, domainRequest("bad name.example")...),
			append([]byte{5, 0}, failure(ReplyGeneralFailure)...), StageRequest},
		{"control byte in host name", append(noAuth, domainRequest("a\x00b")...),
			append([]byte{5, 0}, failure(ReplyGeneralFailure)...), StageRequest},
		{"port 0", append(noAuth, 5, 1, 0, 1, 10, 0, 0, 1, 0, 0),
			append([]byte{5, 0}, failure(ReplyGeneralFailure)...), StageRequest},
		{"request version 4", append(noAuth, 4, 1, 0, 1, 10, 0, 0, 1, 0, 80),
			append([]byte{5, 0}, failure(ReplyGeneralFailure)...), StageRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var dialled bool
			done := make(chan Result, 1)
			s := &Server{
				Dial: func(context.Context, string, string) (net.Conn, error) {
					mu.Lock()
					defer mu.Unlock()
					dialled = true
					return nil, errors.New("no dial expected")
				},
				OnDone: func(r Result) { done <- r },
			}
			c := dialRaw(t, startServer(t, s))
			if _, err := c.Write(tt.send); err != nil {
				t.Fatalf("write: %v", err)
			}
			if got := readToEOF(t, c); !bytes.Equal(got, tt.want) {
				t.Errorf("got % x; want % x", got, tt.want)
			}
			c.Close() // and the server, lingering for the rest of the request, stops at once
			var r Result
			select {
			case r = <-done:
			case <-time.After(lingerTime / 2):
				t.Fatal("the server lingered after the client closed")
			}
			var ce *ConnError
			if !errors.As(r.Err, &ce) || ce.Stage != tt.stage {
				t.Errorf("error: got %v; want a %v error", r.Err, tt.stage)
			}
			mu.Lock()
			defer mu.Unlock()
			if dialled {
				t.Error("the server dialled")
			}
		})
	}
}

// TestNotAllowed checks that a Dial refusing a destination by policy gives
// "connection not allowed by ruleset" to x/net/proxy's client.
func TestNotAllowed(t *testing.T) {
	s := &Server{Dial: func(_ context.Context, _, addr string) (net.Conn, error) {
		return nil, ErrNotAllowed
	}}
	client, _ := socksClient(t, startServer(t, s))
	_, err := client.DialContext(context.Background(), "tcp", "10.0.0.1:22")
	if err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Errorf("got %v; want connection not allowed", err)
	}
}

// TestHandshakeTimeout checks that a client that stops in the middle of its
// greeting or request is dropped after HandshakeTimeout, also on a
// connection without deadlines (as SSH channels are).
func TestHandshakeTimeout(t *testing.T) {
	sends := map[string][]byte{
		"silent":          nil,
		"greeting cut":    {5, 2, 0},
		"request cut":     {5, 1, 0, 5, 1, 0, 3, 20, 'a'},
		"request missing": {5, 1, 0},
	}
	wraps := map[string]func(net.Conn) net.Conn{
		"tcp":          func(c net.Conn) net.Conn { return c },
		"no deadlines": func(c net.Conn) net.Conn { return noDeadlines{c} },
	}
	for cname, wrap := range wraps {
		for name, send := range sends {
			t.Run(cname+"/"+name, func(t *testing.T) {
				client, server := tcpPair(t)
				s := &Server{HandshakeTimeout: 100 * time.Millisecond}
				start := time.Now()
				errc := make(chan error, 1)
				go func() { errc <- s.ServeConn(context.Background(), wrap(server)) }()
				client.Write(send)
				client.SetReadDeadline(time.Now().Add(10 * time.Second))
				io.ReadAll(client) // the method chosen, if any, then EOF
				err := <-errc
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Errorf("got %v; want a deadline error", err)
				}
				if d := time.Since(start); d < 100*time.Millisecond || d > 5*time.Second {
					t.Errorf("dropped after %v; want about 100ms", d)
				}
			})
		}
	}
}

// noDeadlines is a connection that refuses deadlines, as those of SSH
// channels do.
type noDeadlines struct{ net.Conn }

var errNoDeadline = errors.New("deadline not supported")

func (noDeadlines) SetDeadline(time.Time) error      { return errNoDeadline }
func (noDeadlines) SetReadDeadline(time.Time) error  { return errNoDeadline }
func (noDeadlines) SetWriteDeadline(time.Time) error { return errNoDeadline }

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	ln := listen(t, "tcp4")
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	t.Cleanup(func() {
		c.Close()
		s.Close()
	})
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// TestServeConnEndsWithContext cuts a relay in the middle by ending the
// context: ServeConn returns nil, and both connections are closed.
func TestServeConnEndsWithContext(t *testing.T) {
	client, server := tcpPair(t)
	destClient, destServer := tcpPair(t)
	s := &Server{Dial: func(context.Context, string, string) (net.Conn, error) { return destClient, nil }}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.ServeConn(ctx, server) }()
	client.Write([]byte{5, 1, 0, 5, 1, 0, 1, 10, 0, 0, 1, 0, 80})
	client.SetReadDeadline(time.Now().Add(10 * time.Second))
	reply := make([]byte, 12)
	if _, err := io.ReadFull(client, reply); err != nil {
		t.Fatalf("read reply: %v", err)
	}
	if reply[1] != byte(ReplySucceeded) {
		t.Fatalf("reply: got % x; want success", reply)
	}
	bound := netip.AddrPortFrom(netip.AddrFrom4([4]byte(reply[6:10])), uint16(reply[10])<<8|uint16(reply[11]))
	if want := destClient.LocalAddr().(*net.TCPAddr).AddrPort(); bound != want {
		t.Errorf("bound address: got %v; want %v", bound, want)
	}
	client.Write([]byte("ping"))
	destServer.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b := make([]byte, 4); func() bool { _, err := io.ReadFull(destServer, b); return err != nil || string(b) != "ping" }() {
		t.Fatal("ping did not reach the destination")
	}
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("got %v; want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeConn did not return after its context ended")
	}
	if _, err := io.ReadAll(client); err != nil {
		t.Errorf("client: got %v; want EOF", err)
	}
	if _, err := io.ReadAll(destServer); err != nil {
		t.Errorf("destination: got %v; want EOF", err)
	}
}

// TestDialTimeout checks that a dial that does not end within
// HandshakeTimeout is given up, and the client told "TTL expired".
func TestDialTimeout(t *testing.T) {
	s := &Server{
		HandshakeTimeout: 100 * time.Millisecond,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}
	c := dialRaw(t, startServer(t, s))
	c.Write([]byte{5, 1, 0, 5, 1, 0, 3, 5, 's', 'l', 'o', 'w', 'x', 0, 80})
	want := []byte{5, 0, 5, byte(ReplyTTLExpired), 0, 1, 0, 0, 0, 0, 0, 0}
	if got := readToEOF(t, c); !bytes.Equal(got, want) {
		t.Errorf("got % x; want % x", got, want)
	}
}
