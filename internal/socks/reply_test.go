package socks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
)

// dialErrors are dial failures and the replies they get.
var dialErrors = []struct {
	name  string
	err   error
	reply Reply
}{
	{"refused", opError(syscall.ECONNREFUSED), ReplyConnectionRefused},
	{"network unreachable", opError(syscall.ENETUNREACH), ReplyNetworkUnreachable},
	{"network down", opError(syscall.ENETDOWN), ReplyNetworkUnreachable},
	{"host unreachable", opError(syscall.EHOSTUNREACH), ReplyHostUnreachable},
	{"host down", opError(syscall.EHOSTDOWN), ReplyHostUnreachable},
	{"name not found", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "nope.example", IsNotFound: true}}, ReplyHostUnreachable},
	{"connect timed out", opError(syscall.ETIMEDOUT), ReplyTTLExpired},
	{"dial deadline", &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}, ReplyTTLExpired},
	{"context deadline", fmt.Errorf("dial: %w", context.DeadlineExceeded), ReplyTTLExpired},
	{"not allowed", fmt.Errorf("destination 10.0.0.1:22: %w", ErrNotAllowed), ReplyNotAllowed},
	{"canceled", context.Canceled, ReplyGeneralFailure},
	{"reset", opError(syscall.ECONNRESET), ReplyGeneralFailure},
	{"other", errors.New("ssh: channel open failed"), ReplyGeneralFailure},
}

func opError(errno syscall.Errno) error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errno)}
}

func TestReplyFor(t *testing.T) {
	for _, tt := range dialErrors {
		if got := replyFor(tt.err); got != tt.reply {
			t.Errorf("%s: got %v; want %v", tt.name, got, tt.reply)
		}
	}
}

// TestReplyForRealRefusal dials a port that refuses, for the error the
// standard library really gives.
func TestReplyForRealRefusal(t *testing.T) {
	_, err := net.Dial("tcp", refusingAddr(t))
	if err == nil {
		t.Fatal("dial: got a connection; want it refused")
	}
	if got := replyFor(err); got != ReplyConnectionRefused {
		t.Errorf("got %v for %v; want %v", got, err, ReplyConnectionRefused)
	}
}

func TestWriteReply(t *testing.T) {
	tests := []struct {
		name  string
		reply Reply
		bound net.Addr
		want  []byte
	}{
		{"nil", ReplyConnectionRefused, nil, []byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0}},
		{"nil tcp", ReplyGeneralFailure, (*net.TCPAddr)(nil), []byte{5, 1, 0, 1, 0, 0, 0, 0, 0, 0}},
		{"ipv4", ReplySucceeded, &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 40000},
			[]byte{5, 0, 0, 1, 10, 0, 0, 7, 0x9c, 0x40}},
		{"ipv6", ReplySucceeded, &net.TCPAddr{IP: net.IPv6loopback, Port: 1},
			[]byte{5, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1}},
		{"unix", ReplySucceeded, &net.UnixAddr{Name: "/tmp/s", Net: "unix"}, []byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := writeReply(&b, tt.reply, tt.bound); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !bytes.Equal(b.Bytes(), tt.want) {
			t.Errorf("%s: got % x; want % x", tt.name, b.Bytes(), tt.want)
		}
	}
}
