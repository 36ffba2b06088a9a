package slurm

import (
	"strings"
	"testing"
	"time"
)

func TestParseTimes(t *testing.T) {
	for _, tc := range []struct {
		in         string
		start, end int64 // 0: zero time
		err        string
	}{
		{in: "1764700000", start: 1764700000},
		{in: "1764700000 1764700005", start: 1764700000, end: 1764700005},
		{in: "1764700000 1764700000", start: 1764700000, end: 1764700000},
		{in: "99999999999", start: 99999999999},
		{in: "1764700005 1764700000", err: "before start"},
		{in: "999999999", err: "not 10 or 11 digits"},
		{in: "0999999999", err: "out of range"},
		{in: "100000000000", err: "not 10 or 11 digits"},
		{in: "+764700000", err: "not 10 or 11 digits"},
		{in: "1764700000 ", err: "end time"},
		{in: "1764700000  1764700005", err: "end time"},
		{in: "1764700000 1764700005 1764700009", err: "end time"},
		{in: "", err: "start time"},
		{in: "1764700000\n", err: "start time"},
	} {
		got, err := parseTimes(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseTimes(%q): got %+v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseTimes(%q): %v", tc.in, err)
			continue
		}
		if got.start.Unix() != tc.start || (tc.end == 0) != got.end.IsZero() || (tc.end != 0 && got.end.Unix() != tc.end) {
			t.Errorf("parseTimes(%q) = %v, %v; want %d, %d", tc.in, got.start, got.end, tc.start, tc.end)
		}
	}
}

// FuzzParseTimes: whatever a job writes, a time read is in range, UTC,
// and never ends before it starts.
func FuzzParseTimes(f *testing.F) {
	for _, s := range []string{"1764700000", "1764700000 1764700005", "99999999999 99999999999", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseTimes(s)
		if err != nil {
			return
		}
		for _, tm := range []time.Time{got.start, got.end} {
			if tm.IsZero() {
				continue
			}
			if tm.Before(minNodeTime) || tm.Year() > 9999 || tm.Location() != time.UTC {
				t.Fatalf("parseTimes(%q) gave %v", s, tm)
			}
		}
		if got.start.IsZero() || (!got.end.IsZero() && got.end.Before(got.start)) {
			t.Fatalf("parseTimes(%q) = %v, %v", s, got.start, got.end)
		}
	})
}
