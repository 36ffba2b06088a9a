package annotations

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/sluice-hpc/sluice/internal/salt"
)

// A relay address lies in 127.1.0.0 - 127.255.255.254, whether DeriveBind
// gives it or a pod asks for it in ReverseBind (checkRelayAddr): one rule.
//
// nodeLocal, 127.0.0.0/16, is left out because it holds the node-local
// addresses in common use (127.0.0.1, 127.0.0.53 and 127.0.0.54 of
// systemd-resolved, 127.0.1.1 that Debian gives the host name), which a
// relay holding them would take from the node's own services; and
// 127.255.255.255 is the broadcast address of the loopback network.
var nodeLocal = netip.MustParsePrefix("127.0.0.0/16")

const (
	derivedFirst = 0x010000 // low 24 bits of 127.1.0.0, the first address after nodeLocal
	derivedLast  = 0xfffffe // low 24 bits of 127.255.255.254
)

// DeriveBind returns the loopback address the relay of the pod with podUID
// holds when the pod does not set ReverseBind, from the pod's salt (see
// package salt): the same UID and salt always give the same address, and
// without the salt, which other users of the site do not have, it cannot be
// guessed from the UID they see in squeue and bound first. Two pods share
// one only by chance, with odds of 1 in 16,711,679:
//
//	h    = first 4 bytes of HMAC-SHA256(key salt, "sluice relay address" NUL podUID), big-endian
//	low  = 0x010000 + h mod (0xfffffe - 0x010000 + 1)
//	addr = 127.(low>>16).(low>>8 & 0xff).(low & 0xff)
//
// Only the batch script holds the address: a job adopted after a restart
// keeps the one it was rendered with.
func DeriveBind(podUID, podSalt string) (netip.Addr, error) {
	if podUID == "" {
		return netip.Addr{}, errors.New("derive reverse bind address: pod uid is empty")
	}
	if err := salt.Check(podSalt); err != nil {
		return netip.Addr{}, fmt.Errorf("derive reverse bind address: %w", err)
	}
	sum := salt.Derive(podSalt, salt.LabelRelayAddr, podUID)
	h := binary.BigEndian.Uint32(sum[:4])
	low := derivedFirst + h%(derivedLast-derivedFirst+1)
	return netip.AddrFrom4([4]byte{127, byte(low >> 16), byte(low >> 8), byte(low)}), nil
}

// ParseBind parses the value of ReverseBind. An empty value (or one of
// spaces only) gives the zero Addr: the pod leaves the address to sluice,
// which derives it from the pod's salt (DeriveBind) when it writes the job.
//
// A value must be, after parsing, an IPv4 loopback address that a relay
// may hold (checkRelayAddr): in 127.1.0.0 - 127.255.255.254, as DeriveBind's
// addresses are. 127.0.0.1, which every user of the node shares, and the
// rest of 127.0.0.0/16 (127.0.0.53, 127.0.1.1, …) are refused. A v4-mapped
// IPv6 address counts as its IPv4 address: "::ffff:127.1.0.5" gives
// 127.1.0.5, and "::ffff:127.0.0.1" is refused like 127.0.0.1. Other IPv6
// addresses, ::1 included, are refused: the relay binds IPv4 only, since
// IPv6 has a single loopback address (no private one per job is possible),
// and IPv6 clients reach the IPv4 listener through v4-mapped addresses
// anyway. The result is always a 4-byte address.
//
// Errors are *Refusal with ReasonBadBind.
func ParseBind(value string) (netip.Addr, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return netip.Addr{}, nil
	}
	a, err := netip.ParseAddr(v)
	if err != nil {
		return netip.Addr{}, badBind("value %s is not an IP address", quoted(v))
	}
	if a.Zone() != "" {
		return netip.Addr{}, badBind("value %s has an IPv6 zone; want an IPv4 loopback address such as 127.0.0.2", quoted(v))
	}
	a = a.Unmap()
	switch {
	case a.Is6():
		return netip.Addr{}, badBind("value %s is IPv6; the relay binds IPv4 only: want a 127.x.y.z address other than 127.0.0.1", quoted(v))
	}
	if rule := checkRelayAddr(a); rule != "" {
		return netip.Addr{}, badBind("value %s %s", quoted(v), rule)
	}
	return a, nil
}

// CheckRelayAddr reports an address a relay may not hold, by the rule
// ParseBind and DeriveBind follow, for the job side to check the address it
// is given by the same rule. A v4-mapped address counts as its IPv4 address.
func CheckRelayAddr(a netip.Addr) error {
	if rule := checkRelayAddr(a.Unmap()); rule != "" {
		return fmt.Errorf("relay address %v %s", a, rule)
	}
	return nil
}

// checkRelayAddr checks an IPv4 address a relay may hold: a loopback
// address outside nodeLocal, other than the broadcast address. It returns
// the rule broken, or "". Every address DeriveBind gives passes.
func checkRelayAddr(a netip.Addr) string {
	const want = "want an address in 127.1.0.0-127.255.255.254"
	switch {
	case !a.Is4() || !a.IsLoopback():
		return "is not a loopback address: " + want
	case a == netip.AddrFrom4([4]byte{127, 0, 0, 1}):
		return "is 127.0.0.1, shared by every user of the node: " + want
	case nodeLocal.Contains(a):
		return "is in 127.0.0.0/16, which holds the node's own addresses (127.0.0.53 of systemd-resolved, 127.0.1.1 of the host name): " + want
	case a == netip.AddrFrom4([4]byte{127, 255, 255, 255}):
		return "is the broadcast address of 127.0.0.0/8: " + want
	}
	return ""
}

func badBind(format string, args ...any) *Refusal {
	return refuse(ReasonBadBind, ReverseBind, format, args...)
}
