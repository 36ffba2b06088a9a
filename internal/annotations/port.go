package annotations

import "strconv"

// parsePort parses a TCP port: decimal digits only (no sign, no spaces), no
// leading zeros so that each port has one spelling (it also names the
// socket rev-<port>.sock), and 1-65535. It returns the rule broken, or "".
func parsePort(s string) (int, string) {
	if s == "" {
		return 0, "port is empty"
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, "port must be a decimal number"
		}
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, "port must not have leading zeros"
	}
	if len(s) > 5 {
		return 0, "port must be 1-65535"
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, "port must be 1-65535"
	}
	return n, ""
}
