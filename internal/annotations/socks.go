package annotations

import "strings"

// ParseSocksPort parses the value of ReverseSocksPort. An empty value (or
// one of spaces only) asks for no proxy: 0, false. Otherwise the port
// follows the rules of ParseForwards: decimal 1-65535 without sign or
// leading zeros. Errors are *Refusal with ReasonMalformed.
func ParseSocksPort(value string) (int, bool, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return 0, false, nil
	}
	p, rule := parsePort(v)
	if rule != "" {
		return 0, false, refuse(ReasonMalformed, ReverseSocksPort, "value %s: %s", quoted(v), rule)
	}
	return p, true, nil
}
