package relay

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestEncodeDiagRequest(t *testing.T) {
	local := netip.MustParseAddrPort("127.0.0.1:50000")
	remote := netip.MustParseAddrPort("127.4.5.6:6379")
	b, err := encodeDiagRequest(unix.AF_INET, local, remote, 7)
	if err != nil {
		t.Fatal(err)
	}
	ne := binary.NativeEndian
	checks := []struct {
		name      string
		got, want uint64
	}{
		{"nlmsg_len", uint64(ne.Uint32(b[0:])), 72},
		{"nlmsg_type", uint64(ne.Uint16(b[4:])), unix.SOCK_DIAG_BY_FAMILY},
		{"nlmsg_flags (no NLM_F_DUMP)", uint64(ne.Uint16(b[6:])), unix.NLM_F_REQUEST},
		{"nlmsg_seq", uint64(ne.Uint32(b[8:])), 7},
		{"sdiag_family", uint64(b[16]), unix.AF_INET},
		{"sdiag_protocol", uint64(b[17]), unix.IPPROTO_TCP},
		{"idiag_states", uint64(ne.Uint32(b[20:])), 0xffffffff},
		{"idiag_sport", uint64(binary.BigEndian.Uint16(b[24:])), 50000},
		{"idiag_dport", uint64(binary.BigEndian.Uint16(b[26:])), 6379},
		{"idiag_if", uint64(ne.Uint32(b[60:])), 0},
		{"idiag_cookie[0]", uint64(ne.Uint32(b[64:])), noCookie},
		{"idiag_cookie[1]", uint64(ne.Uint32(b[68:])), noCookie},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %d; want %d", c.name, c.got, c.want)
		}
	}
	if got, want := b[28:44], append([]byte{127, 0, 0, 1}, make([]byte, 12)...); !bytes.Equal(got, want) {
		t.Errorf("idiag_src: got % x; want % x", got, want)
	}
	if got, want := b[44:60], append([]byte{127, 4, 5, 6}, make([]byte, 12)...); !bytes.Equal(got, want) {
		t.Errorf("idiag_dst: got % x; want % x", got, want)
	}
	b6, err := encodeDiagRequest(unix.AF_INET6, local, remote, 8)
	if err != nil {
		t.Fatal(err)
	}
	mapped := netip.MustParseAddr("::ffff:127.0.0.1").As16()
	if got := b6[28:44]; !bytes.Equal(got, mapped[:]) {
		t.Errorf("AF_INET6 idiag_src: got % x; want % x", got, mapped)
	}
	if _, err := encodeDiagRequest(unix.AF_INET, netip.MustParseAddrPort("[::1]:1"), remote, 9); err == nil {
		t.Error("AF_INET request for an IPv6 address: got no error")
	}
}

// diagAnswer builds the kernel's answer to a request: one inet_diag_msg.
func diagAnswer(seq uint32, m diagMsg) []byte {
	ne := binary.NativeEndian
	b := make([]byte, nlmsgHdrLen+inetDiagMsgLen)
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint32(b[8:], seq)
	p := b[nlmsgHdrLen:]
	p[0], p[1] = m.family, m.state
	binary.BigEndian.PutUint16(p[4:], m.local.Port())
	binary.BigEndian.PutUint16(p[6:], m.remote.Port())
	copy(p[8:24], m.local.Addr().AsSlice())
	copy(p[24:40], m.remote.Addr().AsSlice())
	ne.PutUint32(p[64:], m.uid)
	ne.PutUint32(p[68:], m.inode)
	return b
}

func diagError(seq uint32, errno int32) []byte {
	ne := binary.NativeEndian
	b := make([]byte, nlmsgHdrLen+4+nlmsgHdrLen)
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], unix.NLMSG_ERROR)
	ne.PutUint32(b[8:], seq)
	ne.PutUint32(b[16:], uint32(-errno))
	return b
}

func TestParseDiagResponse(t *testing.T) {
	v4 := diagMsg{
		family: unix.AF_INET, state: tcpEstablished, uid: 1001, inode: 99,
		local:  netip.MustParseAddrPort("127.0.0.1:50000"),
		remote: netip.MustParseAddrPort("127.4.5.6:6379"),
	}
	v6 := diagMsg{
		family: unix.AF_INET6, state: tcpEstablished, uid: 1002, inode: 100,
		local:  netip.MustParseAddrPort("[::ffff:127.0.0.1]:50001"),
		remote: netip.MustParseAddrPort("[::ffff:127.4.5.6]:6379"),
	}
	badFamily := diagAnswer(1, v4)
	badFamily[nlmsgHdrLen] = 99
	tooLong := diagAnswer(1, v4)
	binary.NativeEndian.PutUint32(tooLong, 1000)
	short := diagAnswer(1, v4)
	binary.NativeEndian.PutUint32(short, nlmsgHdrLen+10)
	belowHeader := diagAnswer(1, v4)
	binary.NativeEndian.PutUint32(belowHeader, 8)
	shortErr := diagError(1, 2)[:nlmsgHdrLen]
	binary.NativeEndian.PutUint32(shortErr, nlmsgHdrLen)
	cases := []struct {
		name  string
		in    []byte
		want  diagMsg
		err   string
		errno syscall.Errno
	}{
		{name: "ipv4", in: diagAnswer(1, v4), want: v4},
		{name: "ipv6", in: diagAnswer(1, v6), want: v6},
		{name: "other sequence skipped", in: append(diagAnswer(0, v6), diagAnswer(1, v4)...), want: v4},
		{name: "no socket", in: diagError(1, int32(syscall.ENOENT)), errno: syscall.ENOENT},
		{name: "ack then answer", in: append(diagError(1, 0), diagAnswer(1, v4)...), want: v4},
		{name: "empty", in: nil, err: "no answer"},
		{name: "truncated header", in: diagAnswer(1, v4)[:10], err: "header truncated"},
		{name: "length beyond buffer", in: tooLong, err: "out of range"},
		{name: "length below header", in: belowHeader, err: "length 8 out of range"},
		{name: "truncated inet_diag_msg", in: short[:nlmsgHdrLen+10], err: "inet_diag_msg truncated"},
		{name: "unknown family", in: badFamily, err: "family 99"},
		{name: "truncated error", in: shortErr, err: "error message truncated"},
	}
	for _, tc := range cases {
		got, err := parseDiagResponse(tc.in, 1)
		switch {
		case tc.errno != 0:
			if !errors.Is(err, tc.errno) {
				t.Errorf("%s: got error %v; want %v", tc.name, err, tc.errno)
			}
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: got error %v; want one containing %q", tc.name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case got != tc.want:
			t.Errorf("%s: got %+v; want %+v", tc.name, got, tc.want)
		}
	}
}

func FuzzParseDiagResponse(f *testing.F) {
	f.Add(diagAnswer(1, diagMsg{family: unix.AF_INET, local: netip.MustParseAddrPort("127.0.0.1:1"), remote: netip.MustParseAddrPort("127.0.0.2:2")}))
	f.Add(diagError(1, 2))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseDiagResponse(b, 1)
		if err != nil {
			return
		}
		if m.family != unix.AF_INET && m.family != unix.AF_INET6 {
			t.Fatalf("accepted family %d", m.family)
		}
		if !m.local.IsValid() || !m.remote.IsValid() {
			t.Fatalf("accepted invalid addresses %v, %v", m.local, m.remote)
		}
	})
}

// TestDiagOwner reads answers as the kernel gives them for each kind of
// client socket: only a socket its process holds, established or
// half-closed by the client, gives its owner. An orphan (closed by its
// process: inode 0, reported as uid 0) and a connection that is over are
// refused with ErrNotHeld; an answer for another pair or a socket that is
// not a client's, with ErrNoSocket.
func TestDiagOwner(t *testing.T) {
	client := netip.MustParseAddrPort("127.0.0.1:50000")
	server := netip.MustParseAddrPort("127.4.5.6:6379")
	msg := func(state uint8, uid, inode uint32) diagMsg {
		return diagMsg{family: unix.AF_INET, state: state, uid: uid, inode: inode, local: client, remote: server}
	}
	cases := []struct {
		name string
		m    diagMsg
		uid  uint32
		err  error // nil: the owner is uid
	}{
		{"established", msg(tcpEstablished, 1001, 42), 1001, nil},
		{"established as root", msg(tcpEstablished, 0, 42), 0, nil},
		{"half-closed by the client", msg(tcpFinWait2, 1001, 42), 1001, nil},
		{"half-closing", msg(tcpFinWait1, 1001, 42), 1001, nil},
		{"orphan in fin-wait-2", msg(tcpFinWait2, 0, 0), 0, ErrNotHeld},
		{"orphan in fin-wait-1", msg(tcpFinWait1, 0, 0), 0, ErrNotHeld},
		{"orphan established", msg(tcpEstablished, 0, 0), 0, ErrNotHeld},
		{"close-wait", msg(tcpCloseWait, 1001, 42), 0, ErrNotHeld},
		{"last-ack", msg(tcpLastAck, 1001, 42), 0, ErrNotHeld},
		{"closing", msg(tcpClosing, 1001, 42), 0, ErrNotHeld},
		{"syn-sent", msg(tcpSynSent, 1001, 42), 0, ErrNotHeld},
		{"time-wait", msg(6, 0, 0), 0, ErrNoSocket},
		{"listener", msg(tcpListen, 0, 7), 0, ErrNoSocket},
		{"other pair", diagMsg{family: unix.AF_INET, state: tcpEstablished, uid: 1001, inode: 42,
			local: netip.MustParseAddrPort("127.0.0.1:50001"), remote: server}, 0, ErrNoSocket},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Through the wire format, as an answer comes.
			m, err := parseDiagResponse(diagAnswer(7, tc.m), 7)
			if err != nil {
				t.Fatal(err)
			}
			uid, err := diagOwner(m, client, server)
			if tc.err == nil && (err != nil || uid != tc.uid) || tc.err != nil && !errors.Is(err, tc.err) {
				t.Errorf("got uid %d, %v; want %d, %v", uid, err, tc.uid, tc.err)
			}
		})
	}
}
