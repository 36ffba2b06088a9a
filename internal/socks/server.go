package socks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"
)

// DefaultHandshakeTimeout is the HandshakeTimeout of a Server that sets
// none.
const DefaultHandshakeTimeout = 10 * time.Second

// Server is a SOCKS5 server. Its zero value is ready to use; a Server must
// not be copied after first use.
type Server struct {
	// Dial opens the connection to a destination, addr being "host:port"
	// with a host name or an IP literal, network "tcp". It is where the
	// destinations allowed are decided: an error wrapping ErrNotAllowed is
	// answered with "connection not allowed by ruleset", other errors with
	// the reply that fits them (connection refused, host unreachable, …).
	// If nil, a net.Dialer dials.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	// Log receives the failures of Serve's connections and accepts, each
	// kind of failure the first time and then every 1000th time. If nil,
	// slog.Default() does.
	Log *slog.Logger

	// HandshakeTimeout bounds the reading of the client's greeting and
	// request, and then, separately, the dial of the destination and the
	// writing of the reply; a client too slow is dropped. If zero,
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration

	// OnConnect, if not nil, is called when the destination of a CONNECT
	// has been dialled, before the client is told. It must not block.
	OnConnect func(req *Request)

	// OnDone, if not nil, is called when ServeConn ends, with what it did.
	// It must not block.
	OnDone func(Result)

	fails failureLog
}

// Result is what ServeConn did with one connection.
type Result struct {
	Request        *Request // nil if no request was read
	Sent, Received int64    // bytes relayed from the client, and to it
	Err            error    // what ServeConn returned
}

// ServeConn serves one client connection: it negotiates a method, reads
// one request, dials its destination and relays between the two until both
// directions have ended or ctx ends. It closes c before it returns. It
// needs no deadline support from c (SSH channels have none): its timeouts
// close c.
//
// The error, a *ConnError, says at which stage the connection failed; it is
// nil when the relay ended with EOF both ways or with ctx.
func (s *Server) ServeConn(ctx context.Context, c net.Conn) error {
	var res Result
	err := s.serveConn(ctx, c, &res)
	if s.OnDone != nil {
		res.Err = err
		s.OnDone(res)
	}
	return err
}

func (s *Server) serveConn(ctx context.Context, c net.Conn, res *Result) error {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	timeout := s.handshakeTimeout()

	req, err := handshake(c, timeout)
	res.Request = req
	if err != nil {
		return err
	}
	dest, err := s.dial(ctx, req.Dest(), timeout)
	if err != nil {
		refuseRequest(c, replyFor(err))
		return &ConnError{Stage: StageDial, Dest: req.Dest(), Err: err}
	}
	defer dest.Close()
	if s.OnConnect != nil {
		s.OnConnect(req)
	}
	t := closeAfter(c, timeout)
	err = writeReply(c, ReplySucceeded, dest.LocalAddr())
	if err := t.stop(err); err != nil {
		return &ConnError{Stage: StageReply, Dest: req.Dest(), Err: err}
	}

	res.Sent, res.Received, err = relay(ctx, c, dest)
	if err != nil {
		return &ConnError{Stage: StageRelay, Dest: req.Dest(), Err: err}
	}
	return nil
}

// handshake negotiates the method and reads a CONNECT request, within
// timeout. It answers what it refuses, and returns the request read, if
// any, with an error.
func handshake(c net.Conn, timeout time.Duration) (*Request, error) {
	t := closeAfter(c, timeout)
	if err := negotiate(c); err != nil {
		err = t.stop(err)
		if errors.Is(err, errNoAcceptableMethod) || errors.Is(err, errVersion) {
			lingerClose(c)
		}
		return nil, &ConnError{Stage: StageGreeting, Err: err}
	}
	req, err := readRequest(c)
	if err := t.stop(err); err != nil {
		var re *RequestError
		if errors.As(err, &re) {
			refuseRequest(c, re.Reply)
		}
		return nil, &ConnError{Stage: StageRequest, Err: err}
	}
	if req.Command != CmdConnect {
		refuseRequest(c, ReplyCommandNotSupported)
		return req, &ConnError{Stage: StageRequest, Dest: req.Dest(),
			Err: fmt.Errorf("%v not supported", req.Command)}
	}
	return req, nil
}

// dial dials addr with s.Dial, within timeout.
func (s *Server) dial(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dial := s.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	return dial(ctx, "tcp", addr)
}

func (s *Server) handshakeTimeout() time.Duration {
	if s.HandshakeTimeout > 0 {
		return s.HandshakeTimeout
	}
	return DefaultHandshakeTimeout
}

func (s *Server) logger() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}
