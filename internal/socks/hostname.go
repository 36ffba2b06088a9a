package socks

import (
	"strings"

	"github.com/sluice-hpc/sluice/internal/hostname"
)

// validHostname reports whether h is a host name by the project's one rule
// (hostname.Check), with an optional trailing dot. So it holds no NUL,
// control, space, '%' or non-ASCII byte, and does not read as a number
// ("10.1", "0x7f" and "2130706433" are IPv4 addresses to the C library).
func validHostname(h string) bool {
	return hostname.Check(strings.TrimSuffix(h, ".")) == nil
}
