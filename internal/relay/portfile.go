package relay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The port file is how a job that picks its ports at run time tells them
// (the batch script names it in SLUICE_PORT_FILE): one line
// "containerPort=actualPort" per port it moved, such as "8080=41234".
// Blank lines and lines starting with # are ignored; a declared port not in
// the file is served on itself. The job writes it as its own user, and
// should write a new file and rename it over the old one, so that the relay
// never reads half of it.
const (
	maxPortFileSize  = 64 << 10
	maxPortFileLines = 1024
)

// PortMap maps the pod's declared ports to the ports the job listens on.
type PortMap map[uint16]uint16

// Actual returns the port the job serves declared on.
func (m PortMap) Actual(declared uint16) uint16 {
	if p, ok := m[declared]; ok {
		return p
	}
	return declared
}

// ParsePortFile parses a port file. Any malformed line makes the whole
// file an error naming the line: a half-understood file would send
// connections to the wrong port.
func ParsePortFile(data []byte) (PortMap, error) {
	if len(data) > maxPortFileSize {
		return nil, fmt.Errorf("port file: %d bytes, at most %d", len(data), maxPortFileSize)
	}
	m := PortMap{}
	n := 0
	for line := range bytes.Lines(data) {
		n++
		if n > maxPortFileLines {
			return nil, fmt.Errorf("port file: more than %d lines", maxPortFileLines)
		}
		s := strings.TrimSpace(string(line))
		if s == "" || s[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return nil, fmt.Errorf("port file: line %d: %q is not containerPort=actualPort", n, clip(s))
		}
		declared, err := parsePortNumber(k)
		if err != nil {
			return nil, fmt.Errorf("port file: line %d: container port: %w", n, err)
		}
		actual, err := parsePortNumber(v)
		if err != nil {
			return nil, fmt.Errorf("port file: line %d: actual port: %w", n, err)
		}
		if _, dup := m[declared]; dup {
			return nil, fmt.Errorf("port file: line %d: port %d given twice", n, declared)
		}
		m[declared] = actual
	}
	return m, nil
}

// parsePortNumber parses a decimal port from 1 to 65535, digits only.
func parsePortNumber(s string) (uint16, error) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 5 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a number from 1 to 65535", clip(s))
	}
	p, err := strconv.ParseUint(s, 10, 16)
	if err != nil || p == 0 {
		return 0, fmt.Errorf("%q is not a number from 1 to 65535", s)
	}
	return uint16(p), nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 40 {
		return strings.ToValidUTF8(s[:40], "") + "..."
	}
	return s
}

// readPortFile reads the port file at path if there is one. It must be a
// regular file of uid's, writable by no one else: another user's file
// could send the job's connections to another of its ports. No file is an
// empty map.
func readPortFile(path string, uid uint32) (PortMap, error) {
	// O_NONBLOCK: a FIFO put there must not hold the relay.
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ENOENT) {
		return PortMap{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("port file: open %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("port file: %w", err)
	}
	owner, _ := fileOwner(fi)
	switch {
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("port file: %s is not a regular file", path)
	case owner != uid:
		return nil, fmt.Errorf("port file: %s is owned by uid %d, not the job's uid %d", path, owner, uid)
	case fi.Mode().Perm()&0o022 != 0:
		return nil, fmt.Errorf("port file: %s has mode %04o, writable by group or others", path, fi.Mode().Perm())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxPortFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("port file: read %s: %w", path, err)
	}
	return ParsePortFile(data)
}
