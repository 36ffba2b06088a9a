package wan

import (
	"slices"
	"testing"
	"time"
)

func TestParseRTTs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []time.Duration
	}{
		{"0", []time.Duration{0}},
		{"0,10ms,50ms", []time.Duration{0, 10 * time.Millisecond, 50 * time.Millisecond}},
		{" 50ms , 0 ", []time.Duration{50 * time.Millisecond, 0}},
		{"10s", []time.Duration{MaxRTT}},
	} {
		got, err := ParseRTTs(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseRTTs(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", ",", "10", "-1ms", "11s", "10ms,10ms", "0,0s", "10ms;50ms", "1e3ms"} {
		if got, err := ParseRTTs(in); err == nil {
			t.Errorf("ParseRTTs(%q) = %v; want an error", in, got)
		}
	}
}

func FuzzParseRTTs(f *testing.F) {
	for _, s := range []string{"0,10ms,50ms", "1h", "-5s", "0,0", "1.5s, 2ms", "", "9223372036854775807ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rtts, err := ParseRTTs(s)
		if err != nil {
			return
		}
		if len(rtts) == 0 {
			t.Fatalf("ParseRTTs(%q): no error and no round trip", s)
		}
		for _, d := range rtts {
			if d < 0 || d > MaxRTT {
				t.Fatalf("ParseRTTs(%q) = %v: %v out of range", s, rtts, d)
			}
		}
		again, err := ParseRTTs(FormatRTTs(rtts))
		if err != nil || !slices.Equal(again, rtts) {
			t.Fatalf("ParseRTTs(FormatRTTs(%v)) = %v, %v", rtts, again, err)
		}
	})
}

func TestLabel(t *testing.T) {
	if got := Label("sluice", 0); got != "sluice" {
		t.Errorf("Label(sluice, 0) = %q; want sluice", got)
	}
	if got := Label("sluice", 50*time.Millisecond); got != "sluice@50ms" {
		t.Errorf("Label(sluice, 50ms) = %q; want sluice@50ms", got)
	}
}
