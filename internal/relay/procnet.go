package relay

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcNet finds socket owners by reading /proc/net/tcp and /proc/net/tcp6,
// the fallback where netlink socket diagnostics are not available. It scans
// every TCP socket of the network namespace, so it is slower than SockDiag.
type ProcNet struct {
	// Root is the proc file system. If empty, "/proc".
	Root string
}

// procEntry is one line of /proc/net/tcp or /proc/net/tcp6.
type procEntry struct {
	local  netip.AddrPort
	remote netip.AddrPort
	state  uint8
	uid    uint32
	inode  uint64
}

// Owner implements Owners. An IPv4 client is looked for in tcp and then, as a
// v4-mapped address, in tcp6; an IPv6 client in tcp6 only.
func (p ProcNet) Owner(client, server netip.AddrPort) (uint32, error) {
	root := p.Root
	if root == "" {
		root = "/proc"
	}
	files := []string{"tcp6"}
	if client.Addr().Unmap().Is4() && server.Addr().Unmap().Is4() {
		files = []string{"tcp", "tcp6"}
	}
	for _, name := range files {
		e, found, err := scanProcNetFile(filepath.Join(root, "net", name), client, server)
		if err != nil {
			return 0, err
		}
		if found {
			if err := checkHeld(client, server, e.state, e.inode); err != nil {
				return 0, fmt.Errorf("proc: %w", err)
			}
			return e.uid, nil
		}
	}
	return 0, fmt.Errorf("proc: %v->%v: %w", client, server, ErrNoSocket)
}

// openProcNet opens a /proc/net/tcp{,6} file; it returns nil and no error
// when the file is missing (a kernel without IPv6).
func openProcNet(path string) (*os.File, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("proc: %w", err)
	}
	return f, nil
}

func scanProcNetFile(path string, client, server netip.AddrPort) (procEntry, bool, error) {
	f, err := openProcNet(path)
	if err != nil || f == nil {
		return procEntry{}, false, err
	}
	defer f.Close()
	e, found, err := findProcNet(f, func(e procEntry) bool {
		return fullSocket(e.state) && sameAddrPort(e.local, client) && sameAddrPort(e.remote, server)
	})
	if err != nil {
		return procEntry{}, false, fmt.Errorf("proc: read %s: %w", path, err)
	}
	return e, found, nil
}

// findProcNet returns the first entry of a /proc/net/tcp{,6} table for which
// match is true. The first line is the header.
func findProcNet(r io.Reader, match func(procEntry) bool) (procEntry, bool, error) {
	sc := bufio.NewScanner(r)
	// Large reads: the kernel walks its socket tables again on every read.
	sc.Buffer(make([]byte, 256<<10), 256<<10)
	if !sc.Scan() {
		return procEntry{}, false, sc.Err()
	}
	for line := 2; sc.Scan(); line++ {
		e, err := parseProcNetLine(sc.Text())
		if err != nil {
			return procEntry{}, false, fmt.Errorf("line %d: %w", line, err)
		}
		if match(e) {
			return e, true, nil
		}
	}
	return procEntry{}, false, sc.Err()
}

// parseProcNetLine parses one socket line of /proc/net/tcp or /proc/net/tcp6:
//
//	sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
//	0: 0100007F:1F90 0100007F:B2C4 01 00000000:00000000 00:00000000 00000000 1001 0 12345 ...
//
// Addresses are the kernel's 32-bit words printed in hexadecimal in host byte
// order (one word for IPv4, four for IPv6); ports are hexadecimal numbers.
func parseProcNetLine(line string) (procEntry, error) {
	f := strings.Fields(line)
	if len(f) < 10 {
		return procEntry{}, fmt.Errorf("%d fields, want at least 10", len(f))
	}
	if !strings.HasSuffix(f[0], ":") {
		return procEntry{}, fmt.Errorf("slot %q does not end in a colon", f[0])
	}
	var e procEntry
	var err error
	if e.local, err = parseProcAddrPort(f[1]); err != nil {
		return procEntry{}, fmt.Errorf("local address: %w", err)
	}
	if e.remote, err = parseProcAddrPort(f[2]); err != nil {
		return procEntry{}, fmt.Errorf("remote address: %w", err)
	}
	if e.local.Addr().Is4() != e.remote.Addr().Is4() {
		return procEntry{}, fmt.Errorf("local %v and remote %v differ in family", e.local, e.remote)
	}
	st, err := strconv.ParseUint(f[3], 16, 8)
	if err != nil {
		return procEntry{}, fmt.Errorf("state %q: %w", f[3], err)
	}
	e.state = uint8(st)
	uid, err := strconv.ParseUint(f[7], 10, 32)
	if err != nil {
		return procEntry{}, fmt.Errorf("uid %q: %w", f[7], err)
	}
	e.uid = uint32(uid)
	if e.inode, err = strconv.ParseUint(f[9], 10, 64); err != nil {
		return procEntry{}, fmt.Errorf("inode %q: %w", f[9], err)
	}
	return e, nil
}

// parseProcAddrPort parses "0100007F:1F90" (IPv4) or 32 hexadecimal digits,
// a colon and a port (IPv6).
func parseProcAddrPort(s string) (netip.AddrPort, error) {
	hexAddr, hexPort, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("%q has no port", s)
	}
	if len(hexPort) != 4 {
		return netip.AddrPort{}, fmt.Errorf("port %q is not 4 hexadecimal digits", hexPort)
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("port %q: %w", hexPort, err)
	}
	raw, err := hex.DecodeString(hexAddr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q: %w", hexAddr, err)
	}
	var addr netip.Addr
	switch len(raw) {
	case 4:
		var b [4]byte
		binary.NativeEndian.PutUint32(b[:], binary.BigEndian.Uint32(raw))
		addr = netip.AddrFrom4(b)
	case 16:
		var b [16]byte
		for i := 0; i < 16; i += 4 {
			binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
		}
		addr = netip.AddrFrom16(b)
	default:
		return netip.AddrPort{}, fmt.Errorf("address %q is %d bytes, want 4 or 16", hexAddr, len(raw))
	}
	return netip.AddrPortFrom(addr, uint16(port)), nil
}
