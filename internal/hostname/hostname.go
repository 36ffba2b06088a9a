// Package hostname is sluice's one rule for the names of machines: compute
// nodes as Slurm reports them, the login node, and the hosts a tunnel or a
// job's /etc/hosts names. Such a name reaches SSH requests, command lines
// and files read by the C library, so the rule keeps it safe there: no
// leading '-' (an option to ssh), no space, quote or shell metacharacter,
// and nothing the C library would read as a number.
package hostname

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// MaxLen is the length of the longest name, without a trailing dot.
const MaxLen = 253

// maxLabel is the length of the longest label.
const maxLabel = 63

// Error is the error of Check and CheckHost: the name and the rule it
// breaks.
type Error struct {
	Name string
	Rule string
}

func (e *Error) Error() string { return fmt.Sprintf("host name %q: %s", e.Name, e.Rule) }

// Check reports whether name is a host name: dot-separated labels of 1 to 63
// ASCII letters, digits, hyphens and underscores (Slurm node names such as
// gpu_01 hold underscores), each starting with a letter or a digit and not
// ending with a hyphen, at most 253 characters in all, no trailing dot, and
// the last label starting with a letter, so that no name reads as an IPv4
// address ("10.1", "0x7f" and "2130706433" are addresses to the C library).
// The error is an *Error.
func Check(name string) error {
	if rule := rule(name); rule != "" {
		return &Error{Name: name, Rule: rule}
	}
	return nil
}

// CheckHost reports whether host is a host name (Check) or an IP address
// without a zone (a zone names an interface of the machine that wrote it,
// and '%' has no place in a shell line). The error is an *Error.
func CheckHost(host string) error {
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return &Error{Name: host, Rule: "IPv6 address must not have a zone"}
		}
		return nil
	}
	return Check(host)
}

// CheckHostPort reports whether addr is HOST:PORT, HOST as CheckHost
// accepts it (an IPv6 address in brackets) and PORT 1-65535.
func CheckHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not HOST:PORT: %w", addr, err)
	}
	if err := CheckHost(host); err != nil {
		return err
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q: port must be 1-65535", addr)
	}
	return nil
}

func rule(name string) string {
	switch {
	case name == "":
		return "empty"
	case len(name) > MaxLen:
		return "longer than 253 characters"
	}
	start := 0
	for i := 0; i <= len(name); i++ {
		if i < len(name) && name[i] != '.' {
			continue
		}
		if r := labelRule(name[start:i]); r != "" {
			return r
		}
		if i == len(name) {
			if !isLetter(name[start]) {
				return "the last label must start with a letter (else the name reads as an IP address)"
			}
		}
		start = i + 1
	}
	return ""
}

func labelRule(l string) string {
	switch {
	case l == "":
		return "empty label (a leading, trailing or double dot)"
	case len(l) > maxLabel:
		return "a label is longer than 63 characters"
	}
	for i := 0; i < len(l); i++ {
		if c := l[i]; !isLetter(c) && !isDigit(c) && c != '-' && c != '_' {
			return "only letters, digits, '-', '_' and dots are allowed"
		}
	}
	switch {
	case !isLetter(l[0]) && !isDigit(l[0]):
		return "a label must start with a letter or a digit"
	case l[len(l)-1] == '-':
		return "a label must not end with '-'"
	}
	return ""
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
