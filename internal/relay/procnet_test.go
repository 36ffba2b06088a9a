package relay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseProcNetLine(t *testing.T) {
	cases := []struct {
		name string
		line string
		want procEntry
		err  string
	}{{
		name: "ipv4 listener",
		line: "   0: 0100007F:2811 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 335394 2 0000000056e563e9 100 0 0 10 0",
		want: procEntry{
			local:  netip.MustParseAddrPort("127.0.0.1:10257"),
			remote: netip.MustParseAddrPort("0.0.0.0:0"),
			state:  tcpListen, uid: 0, inode: 335394,
		},
	}, {
		name: "ipv4 established",
		line: "  12: 0605047F:18EB 0100007F:B2C4 01 00000000:00000000 00:00000000 00000000  1001        0 4242 1 0000000000000000 20 4 30 10 -1",
		want: procEntry{
			local:  netip.MustParseAddrPort("127.4.5.6:6379"),
			remote: netip.MustParseAddrPort("127.0.0.1:45764"),
			state:  tcpEstablished, uid: 1001, inode: 4242,
		},
	}, {
		name: "ipv6 loopback time-wait",
		line: "   0: 00000000000000000000000001000000:A0B7 00000000000000000000000001000000:9EFE 06 00000000:00000000 03:000016BF 00000000     0        0 0 3 000000007106b3ef",
		want: procEntry{
			local:  netip.MustParseAddrPort("[::1]:41143"),
			remote: netip.MustParseAddrPort("[::1]:40702"),
			state:  6,
		},
	}, {
		name: "v4-mapped",
		line: "   3: 0000000000000000FFFF00000100007F:C350 0000000000000000FFFF00000605047F:18EB 01 00000000:00000000 00:00000000 00000000  1002        0 77 1 0000000000000000 20 4 30 10 -1",
		want: procEntry{
			local:  netip.MustParseAddrPort("[::ffff:127.0.0.1]:50000"),
			remote: netip.MustParseAddrPort("[::ffff:127.4.5.6]:6379"),
			state:  tcpEstablished, uid: 1002, inode: 77,
		},
	},
		{name: "too few fields", line: "0: 0100007F:2811 00000000:0000 0A", err: "fields"},
		{name: "slot without colon", line: "0 0100007F:2811 00000000:0000 0A 0:0 0:0 0 0 0 1", err: "slot"},
		{name: "no port", line: "0: 0100007F 00000000:0000 0A 0:0 0:0 0 0 0 1", err: "no port"},
		{name: "short port", line: "0: 0100007F:11 00000000:0000 0A 0:0 0:0 0 0 0 1", err: "port"},
		{name: "odd address", line: "0: 0100007:2811 00000000:0000 0A 0:0 0:0 0 0 0 1", err: "address"},
		{name: "8-byte address", line: "0: 0100007F0100007F:2811 00000000:0000 0A 0:0 0:0 0 0 0 1", err: "want 4 or 16"},
		{name: "mixed families", line: "0: 0100007F:2811 00000000000000000000000001000000:0000 0A 0:0 0:0 0 0 0 1", err: "family"},
		{name: "state too big", line: "0: 0100007F:2811 00000000:0000 1FF 0:0 0:0 0 0 0 1", err: "state"},
		{name: "uid not decimal", line: "0: 0100007F:2811 00000000:0000 0A 0:0 0:0 0 x 0 1", err: "uid"},
		{name: "uid too big", line: "0: 0100007F:2811 00000000:0000 0A 0:0 0:0 0 4294967296 0 1", err: "uid"},
		{name: "inode", line: "0: 0100007F:2811 00000000:0000 0A 0:0 0:0 0 0 0 -1", err: "inode"},
	}
	for _, tc := range cases {
		got, err := parseProcNetLine(tc.line)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: got error %v; want one containing %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: got %+v; want %+v", tc.name, got, tc.want)
		}
	}
}

// TestProcNetOwnerFiles reads a proc tree written by the test: an IPv4
// client in tcp, a v4-mapped one in tcp6, and a time-wait socket that has
// the asked address pair but no owner.
func TestProcNetOwnerFiles(t *testing.T) {
	root := t.TempDir()
	server := netip.MustParseAddrPort("127.4.5.6:6379")
	v4 := procEntry{local: netip.MustParseAddrPort("127.0.0.1:40000"), remote: server, state: tcpEstablished, uid: 1001, inode: 1}
	tw := procEntry{local: netip.MustParseAddrPort("127.0.0.1:40001"), remote: server, state: 6, uid: 0}
	mapped := procEntry{
		local:  netip.MustParseAddrPort("[::ffff:127.0.0.1]:40002"),
		remote: netip.MustParseAddrPort("[::ffff:127.4.5.6]:6379"),
		state:  tcpEstablished, uid: 1002, inode: 3,
	}
	writeProcNet(t, root, "tcp", v4, tw)
	writeProcNet(t, root, "tcp6", mapped)
	cases := []struct {
		client string
		uid    uint32
		found  bool
	}{
		{"127.0.0.1:40000", 1001, true},
		{"127.0.0.1:40001", 0, false},
		{"127.0.0.1:40002", 1002, true},
		{"127.0.0.1:40003", 0, false},
	}
	p := ProcNet{Root: root}
	for _, tc := range cases {
		uid, err := p.Owner(netip.MustParseAddrPort(tc.client), server)
		if tc.found != (err == nil) || uid != tc.uid {
			t.Errorf("Owner(%s) = %d, %v; want %d, found %v", tc.client, uid, err, tc.uid, tc.found)
		}
	}
}

// TestProcNetOwnerNotHeld reads proc tables holding, for the asked address
// pair, a socket closed by its process (an orphan: inode 0, uid 0) and
// connections that are over: all are refused with ErrNotHeld, even with a
// live socket of the same owner further down; a client that half-closed
// its socket but holds it gives its owner.
func TestProcNetOwnerNotHeld(t *testing.T) {
	server := netip.MustParseAddrPort("127.4.5.6:6379")
	client := netip.MustParseAddrPort("127.0.0.1:40000")
	mapped := netip.MustParseAddrPort("[::ffff:127.0.0.1]:40000")
	mappedServer := netip.MustParseAddrPort("[::ffff:127.4.5.6]:6379")
	cases := []struct {
		name      string
		tcp, tcp6 []procEntry
		uid       uint32
		err       error // nil: the owner is uid
	}{
		{name: "orphan", tcp: []procEntry{{local: client, remote: server, state: tcpFinWait2}}, err: ErrNotHeld},
		{name: "orphan in fin-wait-1", tcp: []procEntry{{local: client, remote: server, state: tcpFinWait1}}, err: ErrNotHeld},
		{name: "v4-mapped orphan", tcp6: []procEntry{{local: mapped, remote: mappedServer, state: tcpFinWait2}}, err: ErrNotHeld},
		{name: "close-wait", tcp: []procEntry{{local: client, remote: server, state: tcpCloseWait, uid: 1001, inode: 5}}, err: ErrNotHeld},
		{name: "last-ack", tcp: []procEntry{{local: client, remote: server, state: tcpLastAck, uid: 1001, inode: 5}}, err: ErrNotHeld},
		{name: "half-closed, held", tcp: []procEntry{{local: client, remote: server, state: tcpFinWait2, uid: 1001, inode: 5}}, uid: 1001},
		// A time-wait socket of an earlier connection with the same pair
		// is not the client's: the live one after it is.
		{name: "time-wait then established", tcp: []procEntry{
			{local: client, remote: server, state: 6},
			{local: client, remote: server, state: tcpEstablished, uid: 1001, inode: 5},
		}, uid: 1001},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeProcNet(t, root, "tcp", tc.tcp...)
			writeProcNet(t, root, "tcp6", tc.tcp6...)
			uid, err := ProcNet{Root: root}.Owner(client, server)
			if tc.err == nil && (err != nil || uid != tc.uid) || tc.err != nil && !errors.Is(err, tc.err) {
				t.Errorf("got uid %d, %v; want %d, %v", uid, err, tc.uid, tc.err)
			}
		})
	}
}

func writeProcNet(t *testing.T, root, name string, entries ...procEntry) {
	t.Helper()
	var b strings.Builder
	b.WriteString("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n")
	for i, e := range entries {
		b.WriteString(formatProcNetLine(i, e) + "\n")
	}
	if err := os.MkdirAll(filepath.Join(root, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "net", name), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// formatProcNetLine writes an entry as the kernel does (net/ipv4/tcp_ipv4.c,
// net/ipv6/tcp_ipv6.c).
func formatProcNetLine(slot int, e procEntry) string {
	return fmt.Sprintf("%4d: %s %s %02X 00000000:00000000 00:00000000 00000000 %5d        0 %d 1 0000000000000000 20 4 30 10 -1",
		slot, formatProcAddrPort(e.local), formatProcAddrPort(e.remote), e.state, e.uid, e.inode)
}

func formatProcAddrPort(ap netip.AddrPort) string {
	var s strings.Builder
	raw := ap.Addr().AsSlice()
	for i := 0; i < len(raw); i += 4 {
		fmt.Fprintf(&s, "%08X", binary.NativeEndian.Uint32(raw[i:]))
	}
	fmt.Fprintf(&s, ":%04X", ap.Port())
	return s.String()
}

func FuzzParseProcNetLine(f *testing.F) {
	f.Add("   0: 0100007F:2811 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 335394 2 0000000056e563e9 100 0 0 10 0")
	f.Add("   3: 0000000000000000FFFF00000100007F:C350 0000000000000000FFFF00000605047F:18EB 01 00000000:00000000 00:00000000 00000000  1002        0 77 1")
	f.Add("0: :: 0 0 0 0 0 0 0 0")
	f.Add("")
	f.Fuzz(func(t *testing.T, line string) {
		e, err := parseProcNetLine(line)
		if err != nil {
			return
		}
		// What parses must survive a round trip through the kernel's format.
		again, err := parseProcNetLine(formatProcNetLine(0, e))
		if err != nil {
			t.Fatalf("reparse of %+v: %v", e, err)
		}
		if again != e {
			t.Fatalf("round trip: got %+v; want %+v", again, e)
		}
	})
}
