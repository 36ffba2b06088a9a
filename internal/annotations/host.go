package annotations

import (
	"net/netip"
	"strings"
)

// maxHostLen is the longest DNS name, without a trailing dot.
const maxHostLen = 253

// checkName checks a DNS name as RFC 1123 writes host names, case-insensitive:
// dot-separated labels of 1-63 letters, digits and hyphens, neither starting
// nor ending with a hyphen, at most 253 characters in all. Two rules are
// stricter than RFC 1123:
//   - no trailing dot: the job keeps the name in /etc/hosts, where
//     "redis." and "redis" are different names, so the absolute form would
//     silently not match what the workload looks up;
//   - the last label starts with a letter (as Service names and top-level
//     domains do), so that no name reads as a number: the C library takes
//     "10.1", "0x7f" or "2130706433" for IPv4 addresses and would never look
//     them up in /etc/hosts.
//
// It returns the rule broken, or "".
func checkName(h string) string {
	switch {
	case h == "":
		return "host is empty"
	case len(h) > maxHostLen:
		return "host is longer than 253 characters"
	case strings.HasSuffix(h, "."):
		return "host must not end with a dot"
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if rule := checkLabel(l); rule != "" {
			return rule
		}
	}
	if last := labels[len(labels)-1]; !isLetter(last[0]) {
		return "host must be an IP address or a DNS name whose last label starts with a letter"
	}
	return ""
}

func checkLabel(l string) string {
	switch {
	case l == "":
		return "host has an empty label"
	case len(l) > 63:
		return "host has a label longer than 63 characters"
	case l[0] == '-' || l[len(l)-1] == '-':
		return "host labels must not start or end with a hyphen"
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !isLetter(c) && !(c >= '0' && c <= '9') && c != '-' {
			return "host must be a DNS name (letters, digits, hyphens and dots) or an IP address"
		}
	}
	return ""
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// checkIP checks an address the shadow can open a TCP connection to: a
// unicast address without a zone (a zone names an interface of the machine
// that wrote the annotation, and '%' has no place in a shell line), so not
// an IPv6 link-local one, which cannot be dialled without a zone, and not
// in 0.0.0.0/8, which no host has. A v4-mapped address is checked as IPv4.
func checkIP(a netip.Addr) string {
	v4 := a.Unmap()
	switch {
	case a.Zone() != "":
		return "IPv6 address must not have a zone"
	case v4.IsUnspecified():
		return "host must not be the unspecified address"
	case v4.IsMulticast() || v4 == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "host must be a unicast address"
	case v4.Is6() && v4.IsLinkLocalUnicast():
		return "host must not be an IPv6 link-local address: it cannot be dialled without a zone"
	case v4.Is4() && v4.As4()[0] == 0:
		return "host must not be in 0.0.0.0/8, which no host has"
	}
	return ""
}

// isBareName reports whether h is a Service name of the pod's namespace:
// a single label that is not localhost.
func isBareName(h string) bool {
	return !strings.Contains(h, ".") && !strings.EqualFold(h, "localhost")
}
