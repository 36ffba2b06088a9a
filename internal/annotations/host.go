package annotations

import (
	"errors"
	"net/netip"
	"strings"

	"github.com/sluice-hpc/sluice/internal/hostname"
)

// checkName checks a DNS name by the project's one host-name rule
// (hostname.Check: letters, digits, hyphens and underscores, and a last
// label that starts with a letter, so that the C library never takes the
// name for an IPv4 address and never looks it up in /etc/hosts). Two rules
// are added here:
//   - no trailing dot: the job keeps the name in /etc/hosts, where
//     "redis." and "redis" are different names, so the absolute form would
//     silently not match what the workload looks up;
//   - a bare name is a Service of the pod's namespace, whose names hold
//     no '_'.
//
// It returns the rule broken, or "".
func checkName(h string) string {
	switch {
	case h == "":
		return "host is empty"
	case strings.HasSuffix(h, "."):
		return "host must not end with a dot"
	}
	var he *hostname.Error
	if errors.As(hostname.Check(h), &he) {
		return "host: " + he.Rule
	}
	if isBareName(h) && strings.Contains(h, "_") {
		return "host: a name without a dot is a Service of the pod's namespace, and Service names hold no '_'"
	}
	return ""
}

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
