package socks

import "strings"

// maxHostnameLen is the length of the longest host name, without a
// trailing dot.
const maxHostnameLen = 253

// validHostname reports whether h is a host name as RFC 1123 writes them:
// dot-separated labels of 1 to 63 ASCII letters, digits and hyphens, not
// starting or ending with a hyphen, at most 253 characters in all, with an
// optional trailing dot. So it holds no NUL, control, space, '%' or
// non-ASCII byte. One rule is stricter than RFC 1123: the last label starts
// with a letter, so that no name reads as a number ("10.1", "0x7f" and
// "2130706433" are IPv4 addresses to the C library).
func validHostname(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > maxHostnameLen {
		return false
	}
	last := ""
	for l := range strings.SplitSeq(h, ".") {
		if !validLabel(l) {
			return false
		}
		last = l
	}
	return isLetter(last[0])
}

func validLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		if c := l[i]; !isLetter(c) && !(c >= '0' && c <= '9') && c != '-' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
