package relay

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
)

func TestProcNetListener(t *testing.T) {
	pod := netip.MustParseAddrPort("127.4.5.6:8080")
	listen := func(addr string, uid uint32) procEntry {
		return procEntry{local: netip.MustParseAddrPort(addr), remote: netip.AddrPortFrom(netip.IPv4Unspecified(), 0), state: tcpListen, uid: uid, inode: 7}
	}
	listen6 := func(addr string, uid uint32) procEntry {
		e := listen(addr, uid)
		e.remote = netip.AddrPortFrom(netip.IPv6Unspecified(), 0)
		return e
	}
	cases := []struct {
		name      string
		target    netip.AddrPort
		tcp, tcp6 []procEntry
		want      string // the listener's address, "" for none
		uid       uint32
	}{
		{name: "bound to the target over a wildcard", target: pod,
			tcp: []procEntry{listen("0.0.0.0:8080", 1002), listen("127.4.5.6:8080", 1001)}, want: "127.4.5.6:8080", uid: 1001},
		{name: "ipv4 wildcard", target: pod,
			tcp: []procEntry{listen("0.0.0.0:8080", 1002)}, want: "0.0.0.0:8080", uid: 1002},
		{name: "ipv4 wildcard over ipv6's", target: pod,
			tcp: []procEntry{listen("0.0.0.0:8080", 1001)}, tcp6: []procEntry{listen6("[::]:8080", 1002)}, want: "0.0.0.0:8080", uid: 1001},
		{name: "ipv6 wildcard", target: pod,
			tcp6: []procEntry{listen6("[::]:8080", 1003)}, want: "[::]:8080", uid: 1003},
		{name: "v4-mapped bound to the target", target: pod,
			tcp6: []procEntry{listen6("[::ffff:127.4.5.6]:8080", 1001)}, want: "[::ffff:127.4.5.6]:8080", uid: 1001},
		{name: "127.0.0.1 does not take the pod's address", target: pod,
			tcp: []procEntry{listen("127.0.0.1:8080", 1002)}},
		{name: "another port", target: pod,
			tcp: []procEntry{listen("127.4.5.6:8081", 1001)}},
		{name: "a connection, not a listener", target: pod,
			tcp: []procEntry{{local: pod, remote: netip.MustParseAddrPort("127.0.0.1:5000"), state: tcpEstablished, uid: 1001, inode: 9}}},
		{name: "ipv6 loopback", target: netip.MustParseAddrPort("[::1]:8080"),
			tcp: []procEntry{listen("0.0.0.0:8080", 1002)}, tcp6: []procEntry{listen6("[::1]:8080", 1001)}, want: "[::1]:8080", uid: 1001},
		{name: "ipv6 target ignores ipv4 wildcards", target: netip.MustParseAddrPort("[::1]:8080"),
			tcp: []procEntry{listen("0.0.0.0:8080", 1002)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeProcNet(t, root, "tcp", tc.tcp...)
			writeProcNet(t, root, "tcp6", tc.tcp6...)
			l, err := ProcNet{Root: root}.Listener(tc.target)
			if tc.want == "" {
				if !errors.Is(err, ErrNoSocket) {
					t.Errorf("got %+v, %v; want ErrNoSocket", l, err)
				}
				return
			}
			if err != nil || l.Addr != netip.MustParseAddrPort(tc.want) || l.UID != tc.uid {
				t.Errorf("got %+v, %v; want %s of uid %d", l, err, tc.want, tc.uid)
			}
		})
	}
}

// TestListenerLookupKernel checks both lookups against the kernel's own
// listeners: one bound to the address, a wildcard, none.
func TestListenerLookupKernel(t *testing.T) {
	addr := testAddr()
	// Another 127.0.0.0/8 address: only a wildcard on the port reaches it.
	other := netip.AddrFrom4([4]byte{127, addr.As4()[1], addr.As4()[2], addr.As4()[3] ^ 1})
	lookups := map[string]Listeners{"sock_diag": SockDiag{}, "proc": ProcNet{}}
	me := uint32(os.Getuid())

	bound := listenTCP(t, netip.AddrPortFrom(addr, 0))
	for name, lk := range lookups {
		l, err := lk.Listener(bound)
		if err != nil || l.Addr != bound || l.UID != me || l.Inode == 0 {
			t.Errorf("%s: bound listener: got %+v, %v; want %v of uid %d", name, l, err, bound, me)
		}
		if l, err := lk.Listener(netip.AddrPortFrom(other, bound.Port())); !errors.Is(err, ErrNoSocket) {
			t.Errorf("%s: %v, no listener: got %+v, %v; want ErrNoSocket", name, other, l, err)
		}
	}
	// A wildcard and a bound listener cannot share a port: a fresh one.
	wild := listenTCP(t, netip.AddrPortFrom(netip.IPv4Unspecified(), 0))
	for name, lk := range lookups {
		for _, a := range []netip.Addr{addr, other} {
			l, err := lk.Listener(netip.AddrPortFrom(a, wild.Port()))
			if err != nil || l.Addr != wild || l.UID != me {
				t.Errorf("%s: %v under a wildcard: got %+v, %v; want %v", name, a, l, err, wild)
			}
		}
	}
}

func listenTCP(t *testing.T, at netip.AddrPort) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp4", at.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().(*net.TCPAddr).AddrPort()
}

// fakeListeners answers from a table of listeners by target.
type fakeListeners map[netip.AddrPort]Listener

func (f fakeListeners) Listener(target netip.AddrPort) (Listener, error) {
	if l, ok := f[target]; ok {
		return l, nil
	}
	return Listener{}, ErrNoSocket
}

func TestJobListener(t *testing.T) {
	pod := netip.MustParseAddr("127.4.5.6")
	at := func(a string) netip.AddrPort { return netip.AddrPortFrom(netip.MustParseAddr(a), 8080) }
	mine := func(a string) Listener { return Listener{Addr: at(a), UID: 1001} }
	bobs := func(a string) Listener { return Listener{Addr: at(a), UID: 1002} }
	cases := []struct {
		name   string
		found  fakeListeners
		want   netip.AddrPort
		reason string
	}{
		{"the pod's address", fakeListeners{at("127.4.5.6"): mine("127.4.5.6"), at("127.0.0.1"): bobs("127.0.0.1")}, at("127.4.5.6"), ""},
		{"the job's wildcard, reached on the pod's address", fakeListeners{at("127.4.5.6"): mine("0.0.0.0"), at("127.0.0.1"): bobs("127.0.0.1")}, at("127.4.5.6"), ""},
		{"127.0.0.1 under another user's wildcard", fakeListeners{at("127.4.5.6"): bobs("0.0.0.0"), at("127.0.0.1"): mine("127.0.0.1")}, at("127.0.0.1"), ""},
		{"ipv6 loopback", fakeListeners{at("::1"): mine("::1")}, at("::1"), ""},
		{"another user's only", fakeListeners{at("127.0.0.1"): bobs("127.0.0.1")}, netip.AddrPort{},
			"port 8080: listener 127.0.0.1:8080 owned by uid 1002, not the job's uid 1001"},
		{"nothing", fakeListeners{}, netip.AddrPort{}, "port 8080: nothing listens on 127.4.5.6, 127.0.0.1 or [::1]"},
	}
	for _, tc := range cases {
		r := &Relay{cfg: Config{Addr: pod, UID: 1001}, lookup: tc.found}
		got, rf := r.jobListener(8080, "port 8080")
		switch {
		case tc.reason != "" && (rf == nil || rf.reason != tc.reason):
			t.Errorf("%s: got %v, %v; want the refusal %q", tc.name, got, rf, tc.reason)
		case tc.reason == "" && (rf != nil || got != tc.want):
			t.Errorf("%s: got %v, %v; want %v", tc.name, got, rf, tc.want)
		}
	}
	if !strings.Contains(failureMessages[forwardOwner], "another user") {
		t.Errorf("forwardOwner message %q does not say why", failureMessages[forwardOwner])
	}
}
