package wan

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// MaxRTT bounds a round trip ParseRTTs accepts: longer is no WAN.
const MaxRTT = 10 * time.Second

// ParseRTTs reads a list of round-trip times separated by commas, each a
// Go duration ("0", "10ms", "1.5s"): at least one, none negative or over
// MaxRTT, none twice, kept in the order given.
func ParseRTTs(s string) ([]time.Duration, error) {
	var rtts []time.Duration
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		d, err := time.ParseDuration(f)
		switch {
		case err != nil:
			return nil, fmt.Errorf("round trip %q: want a duration such as 0, 10ms or 50ms", f)
		case d < 0 || d > MaxRTT:
			return nil, fmt.Errorf("round trip %q: want 0 to %v", f, MaxRTT)
		case slices.Contains(rtts, d):
			return nil, fmt.Errorf("round trip %q: given twice", f)
		}
		rtts = append(rtts, d)
	}
	return rtts, nil
}

// FormatRTTs writes rtts as ParseRTTs reads them.
func FormatRTTs(rtts []time.Duration) string {
	s := make([]string, len(rtts))
	for i, d := range rtts {
		s[i] = d.String()
	}
	return strings.Join(s, ",")
}

// Label names what is measured across rtt: name alone for 0, else
// name@rtt ("sluice@50ms").
func Label(name string, rtt time.Duration) string {
	if rtt == 0 {
		return name
	}
	return name + "@" + rtt.String()
}
