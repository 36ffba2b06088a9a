package socks

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"
)

// Reply is the REP field of a reply.
type Reply byte

// The replies of RFC 1928.
const (
	ReplySucceeded           Reply = 0x00
	ReplyGeneralFailure      Reply = 0x01
	ReplyNotAllowed          Reply = 0x02 // connection not allowed by ruleset
	ReplyNetworkUnreachable  Reply = 0x03
	ReplyHostUnreachable     Reply = 0x04
	ReplyConnectionRefused   Reply = 0x05
	ReplyTTLExpired          Reply = 0x06 // also sent when the dial timed out
	ReplyCommandNotSupported Reply = 0x07
	ReplyAddressNotSupported Reply = 0x08
)

func (r Reply) String() string {
	switch r {
	case ReplySucceeded:
		return "succeeded"
	case ReplyGeneralFailure:
		return "general failure"
	case ReplyNotAllowed:
		return "connection not allowed by ruleset"
	case ReplyNetworkUnreachable:
		return "network unreachable"
	case ReplyHostUnreachable:
		return "host unreachable"
	case ReplyConnectionRefused:
		return "connection refused"
	case ReplyTTLExpired:
		return "TTL expired"
	case ReplyCommandNotSupported:
		return "command not supported"
	case ReplyAddressNotSupported:
		return "address type not supported"
	}
	return "reply " + strconv.Itoa(int(r))
}

// ErrNotAllowed is what a Server's Dial wraps in its error to refuse a
// destination by policy: the client is answered "connection not allowed by
// ruleset".
var ErrNotAllowed = errors.New("socks: destination not allowed")

// replyFor is the reply to a failed dial.
func replyFor(err error) Reply {
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.Is(err, ErrNotAllowed):
		return ReplyNotAllowed
	case errors.Is(err, syscall.ECONNREFUSED):
		return ReplyConnectionRefused
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.ENETDOWN):
		return ReplyNetworkUnreachable
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.EHOSTDOWN), errors.As(err, &dnsErr):
		return ReplyHostUnreachable // a name that does not resolve too
	case errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return ReplyTTLExpired
	}
	return ReplyGeneralFailure
}

// writeReply writes a reply with the bound address bound: the address of a
// TCP connection, or 0.0.0.0:0 for any other or for nil.
func writeReply(w io.Writer, r Reply, bound net.Addr) error {
	ap := netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	if t, ok := bound.(*net.TCPAddr); ok && t != nil {
		if a := t.AddrPort(); a.Addr().IsValid() {
			ap = a
		}
	}
	b := make([]byte, 0, 4+16+2)
	b = append(b, version5, byte(r), 0x00)
	b = appendAddrPort(b, ap)
	_, err := w.Write(b)
	return err
}
