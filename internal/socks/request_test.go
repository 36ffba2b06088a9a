package socks

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"testing"
)

// domainRequest is a CONNECT request to host name h, port 443.
func domainRequest(h string) []byte {
	b := append([]byte{version5, byte(CmdConnect), 0, atypDomain, byte(len(h))}, h...)
	return append(b, 0x01, 0xbb)
}

// encodeRequest is the request a client sends for r.
func encodeRequest(r *Request) []byte {
	b := []byte{version5, byte(r.Command), 0}
	switch {
	case r.Name != "":
		b = append(b, atypDomain, byte(len(r.Name)))
		b = append(b, r.Name...)
	case r.Addr.Is4():
		b = append(b, atypIPv4)
		b = append(b, r.Addr.AsSlice()...)
	default:
		b = append(b, atypIPv6)
		b = append(b, r.Addr.AsSlice()...)
	}
	return binary.BigEndian.AppendUint16(b, r.Port)
}

func TestReadRequest(t *testing.T) {
	ipv6 := netip.MustParseAddr("2001:db8::1")
	label63 := strings.Repeat("a", 63)
	name253 := strings.Join([]string{label63, label63, label63, strings.Repeat("b", 61)}, ".")
	tests := []struct {
		name string
		in   []byte
		want Request
	}{
		{"ipv4", []byte{5, 1, 0, 1, 127, 0, 0, 1, 0, 80},
			Request{Command: CmdConnect, Addr: netip.MustParseAddr("127.0.0.1"), Port: 80}},
		{"ipv6", append(append([]byte{5, 1, 0, 4}, ipv6.AsSlice()...), 0x1f, 0x90),
			Request{Command: CmdConnect, Addr: ipv6, Port: 8080}},
		{"ipv6 loopback", append(append([]byte{5, 1, 0, 4}, netip.IPv6Loopback().AsSlice()...), 0xff, 0xff),
			Request{Command: CmdConnect, Addr: netip.IPv6Loopback(), Port: 65535}},
		{"ipv4-mapped ipv6 kept", append(append([]byte{5, 1, 0, 4}, netip.MustParseAddr("::ffff:10.0.0.1").AsSlice()...), 0, 1),
			Request{Command: CmdConnect, Addr: netip.MustParseAddr("::ffff:10.0.0.1"), Port: 1}},
		{"domain", domainRequest("redis.default.svc.cluster.local"),
			Request{Command: CmdConnect, Name: "redis.default.svc.cluster.local", Port: 443}},
		{"domain one label", domainRequest("minio"),
			Request{Command: CmdConnect, Name: "minio", Port: 443}},
		{"domain trailing dot", domainRequest("example.org."),
			Request{Command: CmdConnect, Name: "example.org.", Port: 443}},
		{"domain digits and hyphens", domainRequest("node-01.x9"),
			Request{Command: CmdConnect, Name: "node-01.x9", Port: 443}},
		{"domain 253 characters", domainRequest(name253),
			Request{Command: CmdConnect, Name: name253, Port: 443}},
		{"domain 253 characters and a dot", domainRequest(name253 + "."),
			Request{Command: CmdConnect, Name: name253 + ".", Port: 443}},
		{"domain ipv4 literal", domainRequest("10.1.2.3"),
			Request{Command: CmdConnect, Addr: netip.MustParseAddr("10.1.2.3"), Port: 443}},
		{"domain ipv6 literal", domainRequest("::1"),
			Request{Command: CmdConnect, Addr: netip.IPv6Loopback(), Port: 443}},
		{"bind", []byte{5, 2, 0, 1, 10, 0, 0, 1, 0, 80},
			Request{Command: CmdBind, Addr: netip.MustParseAddr("10.0.0.1"), Port: 80}},
		{"udp associate", []byte{5, 3, 0, 1, 0, 0, 0, 0, 0, 53},
			Request{Command: CmdUDPAssociate, Addr: netip.IPv4Unspecified(), Port: 53}},
		{"unknown command", []byte{5, 9, 0, 1, 10, 0, 0, 1, 0, 80},
			Request{Command: 9, Addr: netip.MustParseAddr("10.0.0.1"), Port: 80}},
		{"reserved byte ignored", []byte{5, 1, 0xff, 1, 10, 0, 0, 1, 0, 80},
			Request{Command: CmdConnect, Addr: netip.MustParseAddr("10.0.0.1"), Port: 80}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const rest = "after the request"
			r := bytes.NewReader(append(tt.in, rest...))
			got, err := ReadRequest(r)
			if err != nil {
				t.Fatalf("got error %v; want %+v", err, tt.want)
			}
			if *got != tt.want {
				t.Errorf("got %+v; want %+v", *got, tt.want)
			}
			if left, _ := io.ReadAll(r); string(left) != rest {
				t.Errorf("left unread: got %q; want %q", left, rest)
			}
		})
	}
}

func TestReadRequestRefused(t *testing.T) {
	tests := []struct {
		name  string
		in    []byte
		reply Reply
	}{
		{"version 4", []byte{4, 1, 0, 1, 10, 0, 0, 1, 0, 80}, ReplyGeneralFailure},
		{"version 0", []byte{0, 1, 0, 1, 10, 0, 0, 1, 0, 80}, ReplyGeneralFailure},
		{"version 6", []byte{6, 1, 0, 1, 10, 0, 0, 1, 0, 80}, ReplyGeneralFailure},
		{"address type 0", []byte{5, 1, 0, 0, 10, 0, 0, 1, 0, 80}, ReplyAddressNotSupported},
		{"address type 2", []byte{5, 1, 0, 2, 10, 0, 0, 1, 0, 80}, ReplyAddressNotSupported},
		{"address type 5", []byte{5, 1, 0, 5}, ReplyAddressNotSupported},
		{"address type 255", []byte{5, 1, 0, 255}, ReplyAddressNotSupported},
		{"port 0 ipv4", []byte{5, 1, 0, 1, 10, 0, 0, 1, 0, 0}, ReplyGeneralFailure},
		{"port 0 domain", append(domainRequest("example.org")[:16], 0, 0), ReplyGeneralFailure},
		{"empty domain", []byte{5, 1, 0, 3, 0, 0, 80}, ReplyGeneralFailure},
	}
	for _, h := range badHostnames {
		if len(h) <= 255 {
			tests = append(tests, struct {
				name  string
				in    []byte
				reply Reply
			}{fmt.Sprintf("domain %q", h), domainRequest(h), ReplyGeneralFailure})
		}
	}
	tests = append(tests, struct {
		name  string
		in    []byte
		reply Reply
	}{"domain ipv6 literal with zone", domainRequest("fe80::1%eth0"), ReplyGeneralFailure})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadRequest(bytes.NewReader(tt.in))
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("got %v; want a *RequestError", err)
			}
			if re.Reply != tt.reply {
				t.Errorf("reply: got %v; want %v (%v)", re.Reply, tt.reply, err)
			}
			if !strings.HasPrefix(err.Error(), "socks: read request: ") {
				t.Errorf("error %q does not name the operation", err)
			}
		})
	}
}

func TestReadRequestTruncated(t *testing.T) {
	full := map[string][]byte{
		"ipv4":   {5, 1, 0, 1, 10, 0, 0, 1, 0, 80},
		"ipv6":   append(append([]byte{5, 1, 0, 4}, netip.IPv6Loopback().AsSlice()...), 0, 80),
		"domain": domainRequest("example.org"),
	}
	for name, in := range full {
		for n := range len(in) {
			want := io.ErrUnexpectedEOF
			if n == 0 {
				want = io.EOF
			}
			_, err := ReadRequest(bytes.NewReader(in[:n]))
			if !errors.Is(err, want) {
				t.Errorf("%s cut to %d bytes: got %v; want %v", name, n, err, want)
			}
		}
	}
}

// TestReadRequestLongDomain sends a 255-byte name, the longest the length
// byte allows and longer than a host name may be: it is refused, after
// reading exactly the request.
func TestReadRequestLongDomain(t *testing.T) {
	h := strings.Repeat(strings.Repeat("a", 50)+".", 4) + strings.Repeat("b", 51)
	if len(h) != 255 {
		t.Fatalf("name of %d bytes; want 255", len(h))
	}
	r := bytes.NewReader(append(domainRequest(h), "rest"...))
	_, err := ReadRequest(r)
	var re *RequestError
	if !errors.As(err, &re) || re.Reply != ReplyGeneralFailure {
		t.Fatalf("got %v; want a general failure", err)
	}
	if r.Len() != len("rest") {
		t.Errorf("left unread: got %d bytes; want 4", r.Len())
	}
}

func FuzzReadRequest(f *testing.F) {
	f.Add([]byte{5, 1, 0, 1, 127, 0, 0, 1, 0, 80})
	f.Add(append(append([]byte{5, 1, 0, 4}, netip.IPv6Loopback().AsSlice()...), 0x1f, 0x90))
	f.Add(domainRequest("redis.default.svc.cluster.local"))
	f.Add(domainRequest("::ffff:10.0.0.1"))
	f.Add(domainRequest("a\x00b"))
	f.Add([]byte{5, 2, 0, 1, 10, 0, 0, 1, 0, 80})
	f.Add([]byte{5, 1, 0, 3, 0, 0, 80})
	f.Add([]byte{5, 1, 0, 9})
	f.Add([]byte{4, 1, 0, 1, 10, 0, 0, 1, 0, 80})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		req, err := ReadRequest(r)
		if read := len(data) - r.Len(); read > MaxRequestLen {
			t.Fatalf("read %d bytes; at most %d allowed", read, MaxRequestLen)
		}
		if err != nil {
			var re *RequestError
			if errors.As(err, &re) && re.Reply == ReplySucceeded {
				t.Fatalf("refusal %v with reply succeeded", err)
			}
			return
		}
		switch {
		case req.Port == 0:
			t.Fatalf("%+v: port 0 accepted", req)
		case req.Addr.IsValid() == (req.Name != ""):
			t.Fatalf("%+v: want exactly one of Addr and Name", req)
		case req.Name != "" && !validHostname(req.Name):
			t.Fatalf("%+v: invalid name accepted", req)
		case req.Addr.Zone() != "":
			t.Fatalf("%+v: address with a zone accepted", req)
		}
		again, err := ReadRequest(bytes.NewReader(encodeRequest(req)))
		if err != nil {
			t.Fatalf("%+v: read again: %v", req, err)
		}
		if *again != *req {
			t.Fatalf("read again: got %+v; want %+v", *again, *req)
		}
	})
}
