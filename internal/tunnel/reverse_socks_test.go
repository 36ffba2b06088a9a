package tunnel

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/sluice-hpc/sluice/internal/socks"
	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"github.com/sluice-hpc/sluice/internal/testrig"
)

// TestSocksRefusesThePodItself asks the proxy, through a real SOCKS5
// exchange, for destinations that are the shadow pod itself, by IP literal
// and by names whose records (from a DNS server of the test's) are loopback,
// unspecified, v4-mapped loopback or one of the pod's own addresses: each is
// refused with "connection not allowed by ruleset" before any connection is
// made. A name resolving to another address of the machine, not the pod's
// as the guard is told, is dialled and relayed.
func TestSocksRefusesThePodItself(t *testing.T) {
	other := nonLoopbackAddr(t)
	ln, err := net.Listen("tcp", netip.AddrPortFrom(other, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	echoOn(t, ln)
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	self := netip.MustParseAddr("192.0.2.123") // the pod's own address, as the guard is told
	resolver := fakeDNS(t, map[string][]netip.Addr{
		"ip6-localhost":         {netip.IPv6Loopback()},
		"ip6-loopback":          {netip.IPv6Loopback()},
		"localhost.localdomain": {netip.MustParseAddr("127.0.0.1")},
		"five.test":             {netip.MustParseAddr("127.0.0.5")},
		"six.test":              {netip.IPv6Loopback()},
		"mapped.test":           {netip.MustParseAddr("::ffff:127.0.0.1")},
		"zero.test":             {netip.IPv4Unspecified()},
		"zero6.test":            {netip.IPv6Unspecified()},
		"this-network.test":     {netip.MustParseAddr("0.1.2.3")},
		"self.test":             {self},
		"ok.test":               {other},
	})
	r := &Reverse{Hop: &Hop{Timeout: 5 * time.Second}, Resolver: resolver}
	r.socksGuard.localAddrs = func() ([]net.Addr, error) {
		return []net.Addr{&net.IPNet{IP: self.AsSlice(), Mask: net.CIDRMask(24, 32)}}, nil
	}
	proxy := startSocks(t, &reverseState{r: r})

	cases := []struct {
		host string
		want socks.Reply
	}{
		{"ip6-localhost", socks.ReplyNotAllowed},
		{"ip6-loopback", socks.ReplyNotAllowed},
		{"localhost.localdomain", socks.ReplyNotAllowed},
		{"localhost", socks.ReplyNotAllowed},
		{"five.test", socks.ReplyNotAllowed},
		{"six.test", socks.ReplyNotAllowed},
		{"mapped.test", socks.ReplyNotAllowed},
		{"zero.test", socks.ReplyNotAllowed},
		{"zero6.test", socks.ReplyNotAllowed},
		{"this-network.test", socks.ReplyNotAllowed},
		{"self.test", socks.ReplyNotAllowed},
		{"127.0.0.1", socks.ReplyNotAllowed},
		{"127.0.0.5", socks.ReplyNotAllowed},
		{"::1", socks.ReplyNotAllowed},
		{"::ffff:127.0.0.1", socks.ReplyNotAllowed},
		{"0.0.0.0", socks.ReplyNotAllowed},
		{"ok.test", socks.ReplySucceeded},
		{other.String(), socks.ReplySucceeded},
	}
	for _, tc := range cases {
		t.Run(tc.host, func(t *testing.T) {
			c, rep := socksConnect(t, proxy, tc.host, port)
			defer c.Close()
			if rep != tc.want {
				t.Fatalf("reply %d; want %d", rep, tc.want)
			}
			if rep != socks.ReplySucceeded {
				return
			}
			msg := "through the proxy " + tc.host + "\n"
			if _, err := io.WriteString(c, msg); err != nil {
				t.Fatal(err)
			}
			c.(*net.TCPConn).CloseWrite()
			got, err := io.ReadAll(c)
			if err != nil || string(got) != msg {
				t.Errorf("echo %q, %v; want %q", got, err, msg)
			}
		})
	}

	// Without a list of its own, the guard asks the system: the machine's
	// address is then the pod's own, refused.
	r2 := &Reverse{Hop: &Hop{Timeout: 5 * time.Second}, Resolver: resolver}
	c, rep := socksConnect(t, startSocks(t, &reverseState{r: r2}), "ok.test", port)
	c.Close()
	if rep != socks.ReplyNotAllowed {
		t.Errorf("an address of the machine's own interfaces: reply %d; want %d", rep, socks.ReplyNotAllowed)
	}
}

func TestDestGuardCannotListAddresses(t *testing.T) {
	g := destGuard{localAddrs: func() ([]net.Addr, error) { return nil, errors.New("no netlink") }}
	if err := g.control("tcp4", "10.96.0.10:443", nil); !errors.Is(err, socks.ErrNotAllowed) {
		t.Errorf("control = %v; want a refusal when the pod's addresses are unknown", err)
	}
}

// nonLoopbackAddr is an IPv4 address of this machine that is not loopback
// or link-local.
func nonLoopbackAddr(t *testing.T) netip.Addr {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.String())
		if err == nil && p.Addr().Is4() && !p.Addr().IsLoopback() && !p.Addr().IsLinkLocalUnicast() {
			return p.Addr()
		}
	}
	testrig.Unavailable(t, "no IPv4 address other than loopback on this machine")
	return netip.Addr{}
}

// echoOn echoes every connection accepted on ln, half-closing after EOF.
func echoOn(t *testing.T, ln net.Listener) {
	sshxtest.Serve(t, ln, echoJob)
}

// startSocks serves the SOCKS proxy of s on a loopback port and returns its
// address.
func startSocks(t *testing.T, s *reverseState) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &socks.Server{Dial: s.socksDial, Log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); ln.Close(); <-done })
	return ln.Addr().String()
}

// socksConnect asks the proxy at addr to CONNECT to host:port (an IP literal
// or a name) and returns the connection and the reply code.
func socksConnect(t *testing.T, addr, host string, port uint16) (net.Conn, socks.Reply) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	req := []byte{5, 1, 0, 5, 1, 0}
	if a, err := netip.ParseAddr(host); err == nil && a.Is4() {
		req = append(append(req, 1), a.AsSlice()...)
	} else if err == nil {
		req = append(append(req, 4), a.AsSlice()...)
	} else {
		req = append(append(req, 3, byte(len(host))), host...)
	}
	req = binary.BigEndian.AppendUint16(req, port)
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 6)
	if _, err := io.ReadFull(c, head); err != nil || !bytes.Equal(head[:2], []byte{5, 0}) || head[2] != 5 {
		t.Fatalf("SOCKS answer %x, %v", head, err)
	}
	rep := socks.Reply(head[3])
	n := 6 // the rest of an IPv4 reply: address and port
	if head[5] == 4 {
		n = 18
	}
	rest := make([]byte, n)
	if _, err := io.ReadFull(c, rest); err != nil {
		t.Fatalf("SOCKS reply: %v", err)
	}
	c.SetDeadline(time.Time{})
	return c, rep
}

// fakeDNS is a resolver asking a DNS server of the test's, which answers A
// and AAAA questions for the names of records (any case, with or without a
// trailing dot) and NXDOMAIN for others. Names the hosts file holds are
// answered from there first, as the system's resolver does.
func fakeDNS(t *testing.T, records map[string][]netip.Addr) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if out, err := dnsAnswer(buf[:n], records); err == nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	server := pc.LocalAddr().String()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "udp", server)
		},
	}
}

func dnsAnswer(query []byte, records map[string][]netip.Addr) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")
	addrs, known := records[name]
	rcode := dnsmessage.RCodeSuccess
	if !known {
		rcode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RCode: rcode})
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
	for _, a := range addrs {
		switch {
		case q.Type == dnsmessage.TypeA && a.Is4():
			err = b.AResource(rh, dnsmessage.AResource{A: a.As4()})
		case q.Type == dnsmessage.TypeAAAA && a.Is6():
			err = b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
		if err != nil {
			return nil, err
		}
	}
	return b.Finish()
}
