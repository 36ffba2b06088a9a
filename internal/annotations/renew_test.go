package annotations

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseRenewBefore(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"", 0, ""},
		{"20m", 20 * time.Minute, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"30s", 30 * time.Second, ""},
		{"168h", 168 * time.Hour, ""},
		{"29s", 0, "less than 30s"},
		{"-5m", 0, "less than 30s"},
		{"0", 0, "less than 30s"},
		{"1m0.5s", 0, "whole number of seconds"},
		{"169h", 0, "more than 168h"},
		{"20", 0, "not a duration"},
		{" 20m", 0, "not a duration"},
		{"20 m", 0, "not a duration"},
		{"twenty minutes", 0, "not a duration"},
		{strings.Repeat("9", 200) + "h", 0, "..."},
	} {
		got, err := ParseRenewBefore(tc.in)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("ParseRenewBefore(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			continue
		}
		var r *Refusal
		if !errors.As(err, &r) || r.Reason != ReasonRenewal || r.Annotation != RenewBefore || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseRenewBefore(%q) = %v, %v; want a %s refusal saying %q", tc.in, got, err, ReasonRenewal, tc.err)
		}
	}
}

func TestCheckRenewal(t *testing.T) {
	ask := map[string]string{RenewBefore: "30s"}
	limit := RenewalPod{TimeLimit: 2 * time.Minute}
	for _, tc := range []struct {
		name string
		a    map[string]string
		pod  RenewalPod
		want time.Duration
		err  string
	}{
		{"not asked", nil, RenewalPod{}, 0, ""},
		{"limit", ask, limit, 30 * time.Second, ""},
		{"Always", ask, RenewalPod{RestartPolicy: "Always", TimeLimit: time.Hour}, 30 * time.Second, ""},
		{"flags", ask, RenewalPod{FlagsSetTime: true}, 30 * time.Second, ""},
		{"empty", map[string]string{RenewBefore: ""}, limit, 0, "empty"},
		{"malformed", map[string]string{RenewBefore: "soon"}, limit, 0, "not a duration"},
		{"Never", ask, RenewalPod{RestartPolicy: "Never", TimeLimit: time.Hour}, 0, "restartPolicy Never"},
		{"OnFailure", ask, RenewalPod{RestartPolicy: "OnFailure", TimeLimit: time.Hour}, 0, "restartPolicy OnFailure"},
		{"no limit", ask, RenewalPod{}, 0, "no time limit"},
		{"reverse forwards", map[string]string{RenewBefore: "30s", ReverseForwards: "redis:6379"}, limit, 0, "not with a reverse tunnel"},
		{"socks", map[string]string{RenewBefore: "30s", ReverseSocksPort: "1080"}, limit, 0, "not with a reverse tunnel"},
		{"equal to the limit", map[string]string{RenewBefore: "2m"}, limit, 0, "not less than the job's time limit 2m0s"},
		{"over the limit", map[string]string{RenewBefore: "1h"}, limit, 0, "not less than"},
	} {
		got, err := CheckRenewal(tc.a, tc.pod)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("%s: CheckRenewal = %v, %v; want %v", tc.name, got, err, tc.want)
			}
			continue
		}
		var r *Refusal
		if !errors.As(err, &r) || r.Reason != ReasonRenewal || !strings.Contains(r.Rule, tc.err) {
			t.Errorf("%s: CheckRenewal = %v, %v; want a refusal saying %q", tc.name, got, err, tc.err)
		}
	}
}

func FuzzParseRenewBefore(f *testing.F) {
	for _, s := range []string{"20m", "30s", "1h30m", "-1s", "1.5s", "9999999999h", " 1m", "1µs", "0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, err := ParseRenewBefore(v)
		if err != nil {
			var r *Refusal
			if !errors.As(err, &r) || r.Reason != ReasonRenewal || r.Annotation != RenewBefore || r.Rule == "" {
				t.Fatalf("ParseRenewBefore(%q): error %v is not a renewal refusal", v, err)
			}
			if len(r.Rule) > 4*maxQuoted+100 {
				t.Fatalf("ParseRenewBefore(%q): rule of %d bytes quotes too much", v, len(r.Rule))
			}
			return
		}
		if v == "" {
			if d != 0 {
				t.Fatalf("ParseRenewBefore(\"\") = %v; want 0", d)
			}
			return
		}
		if d < MinRenewBefore || d > MaxRenewBefore || d%time.Second != 0 {
			t.Fatalf("ParseRenewBefore(%q) = %v: out of bounds or not whole seconds", v, d)
		}
		if again, err := ParseRenewBefore(d.String()); err != nil || again != d {
			t.Fatalf("round trip of %q: %v gave %v, %v", v, d, again, err)
		}
	})
}
