//go:build bench

package rigbench

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// LoginKnownHostsAt writes dir/name, a known_hosts file that pins for
// addr (host:port, a relay in front of the login node) the keys the rig
// pins for the login node, and returns its path: the client checks the
// login node's key through the relay as it would without it.
func (r *Rig) LoginKnownHostsAt(dir, name, addr string) (string, error) {
	data, err := os.ReadFile(r.KnownHosts)
	if err != nil {
		return "", fmt.Errorf("known_hosts for %s: %w", addr, err)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("known_hosts for %s: %w", addr, err)
	}
	var out []string
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(line)
		if len(fields) >= 3 && slices.Contains(strings.Split(fields[0], ","), r.LoginHost) {
			out = append(out, fmt.Sprintf("[%s]:%s %s %s\n", host, port, fields[1], fields[2]))
		}
	}
	if len(out) == 0 {
		return "", fmt.Errorf("known_hosts for %s: %s pins no key for %s", addr, r.KnownHosts, r.LoginHost)
	}
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, []byte(strings.Join(out, "")), 0o644); err != nil {
		return "", fmt.Errorf("known_hosts for %s: %w", addr, err)
	}
	return file, nil
}
