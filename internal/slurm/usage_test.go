package slurm

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/site"
)

// The output captured from the rig's sstat and sacct (Slurm 22.05 and
// 24.11; busy jobs' batch steps under jobacct_gather/linux) reads as the
// steps' figures: CPU time in seconds, memory in bytes (--noconvert); the
// job lines of sacct, and its steps with no usage, are left out.
func TestParseUsageCaptured(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	for name, want := range map[string]map[JobID]Usage{
		"sstat-22.05.txt": {"1966": {CPU: time.Second, Memory: 4018176}, "1967": {CPU: time.Second, Memory: 3878912}},
		"sstat-24.11.txt": {"328": {CPU: 15 * time.Second, Memory: 4096000}, "329": {CPU: 15 * time.Second, Memory: 4317184}},
		"sacct-22.05.txt": {"1954": {CPU: 30 * time.Second, Memory: 3756032}, "1955": {CPU: 24 * time.Second, Memory: 3727360}},
		"sacct-24.11.txt": {"328": {CPU: 20 * time.Second, Memory: 4096000}, "329": {CPU: 20 * time.Second, Memory: 4317184}},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := os.ReadFile(filepath.Join("testdata", "usage", name))
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseUsage(out, at)
			if err != nil {
				t.Fatal(err)
			}
			for id, u := range want {
				u.Time = at
				want[id] = u
			}
			if !maps.Equal(got, want) {
				t.Errorf("got %+v; want %+v", got, want)
			}
		})
	}
}

func TestParseUsageMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      []JobID // parsed all the same
		err       string
	}{
		{"no separator", "12.batch cpu=00:00:01,mem=1\n13.batch|cpu=00:00:02,mem=2\n", []JobID{"13"}, "malformed record"},
		{"third field", "12.batch|cpu=00:00:01,mem=1|x\n", nil, "malformed record"},
		{"bad job", "x2.batch|cpu=00:00:01,mem=1\n", nil, "malformed step"},
		{"listed twice", "12.batch|cpu=00:00:01,mem=1\n12.batch|cpu=00:00:09,mem=9\n13.batch|cpu=00:00:02,mem=2\n", []JobID{"13"}, "listed 2 times"},
		{"bad cpu", "12.batch|cpu=1:2:3:4,mem=1\n", nil, "malformed CPU time"},
		{"bad mem", "12.batch|cpu=00:00:01,mem=-1\n", nil, "mem:"},
		{"cpu twice", "12.batch|cpu=00:00:01,cpu=00:00:02,mem=1\n", nil, "cpu listed twice"},
		{"bad entry", "12.batch|cpu=00:00:01,mem=1,garbage\n", nil, "malformed TRES entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseUsage([]byte(tc.out), time.Now())
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v; want one saying %q", err, tc.err)
			}
			if ids := slices.Sorted(maps.Keys(got)); !slices.Equal(ids, tc.want) {
				t.Errorf("parsed %v; want %v", ids, tc.want)
			}
		})
	}
	// Other steps, job lines, and usage lacking cpu or mem are skipped
	// without an error.
	got, err := parseUsage([]byte("12|\n12.extern|cpu=00:00:01,mem=1\n12.0|cpu=00:00:01,mem=1\n13.batch|cpu=00:00:01\n14.batch|\n"), time.Now())
	if err != nil || len(got) != 0 {
		t.Errorf("got %+v, %v; want nothing and no error", got, err)
	}
}

func TestParseCPUTime(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"00:00:15":        15 * time.Second,
		"01:02:03":        time.Hour + 2*time.Minute + 3*time.Second,
		"2-03:04:05":      51*time.Hour + 4*time.Minute + 5*time.Second,
		"00:29.003":       29*time.Second + 3*time.Millisecond,
		"1:00:00.5":       time.Hour + 500*time.Millisecond,
		"75:00:00":        75 * time.Hour,
		"12":              12 * time.Second,
		"100000-00:00:00": 100_000 * 24 * time.Hour,
	} {
		if got, err := parseCPUTime(in); err != nil || got != want {
			t.Errorf("parseCPUTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-", "1-", "1-00:00", "00:60:00", "00:00:60", "a:00:00", "1:2:3:4",
		"00:00:01.", "00:00:01.1234567890", "00:00:01.x", "100001-00:00:00", "213503982334-14:25:51",
		"-00:00:01", "00:-1:00", "99999999999999999999", ".5", "00:00:+1"} {
		if got, err := parseCPUTime(in); err == nil {
			t.Errorf("parseCPUTime(%q) = %v; want an error", in, got)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "3756032": 3756032, "3668K": 3668 << 10, "2M": 2 << 20, "1P": 1 << 50} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "K", "-1", "1.5M", "2000P", "1152921504606846977", "0x10", " 1"} {
		if got, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) = %d; want an error", in, got)
		}
	}
}

// Usage asks sstat once for every job's batch step, then sacct once for
// the jobs sstat had nothing for.
func TestUsageOneSstatThenSacct(t *testing.T) {
	f := newFakeSite()
	f.handle = func(args []string) ([]byte, error) {
		steps := args[slices.Index(args, "-j")+1]
		switch args[0] {
		case "sstat":
			if steps != "12.batch,13.batch,14.batch" {
				t.Errorf("sstat -j %s; want the three batch steps", steps)
			}
			return []byte("12.batch|cpu=00:00:15,energy=0,mem=3756032,pages=0\n13.batch|\n"), nil
		case "sacct":
			if steps != "13.batch,14.batch" {
				t.Errorf("sacct -j %s; want the steps sstat had nothing for", steps)
			}
			return []byte("13|\n13.batch|cpu=00:00:30,mem=1024\n"), nil
		}
		return nil, errors.New("unexpected command")
	}
	at := time.Unix(1_800_000_000, 0)
	c := &Client{Site: f, DataRoot: "/data", Now: func() time.Time { return at }, Logger: slog.New(&testLog{t: t})}
	got, err := c.Usage(context.Background(), []JobID{"12", "13", "14"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[JobID]Usage{
		"12": {CPU: 15 * time.Second, Memory: 3756032, Time: at},
		"13": {CPU: 30 * time.Second, Memory: 1024, Time: at},
	}
	if !maps.Equal(got, want) {
		t.Errorf("got %+v; want %+v", got, want)
	}
	if n, m := f.count("sstat"), f.count("sacct"); n != 1 || m != 1 {
		t.Errorf("%d sstat and %d sacct calls; want one each", n, m)
	}
}

// A site without accounting storage: sstat's figures stand, and sacct is
// not asked again.
func TestUsageWithoutAccounting(t *testing.T) {
	f := newFakeSite()
	f.handle = func(args []string) ([]byte, error) {
		if args[0] == "sacct" {
			return nil, &site.ExitError{Code: 1, Stderr: "sacct: error: Slurm accounting storage is disabled"}
		}
		return []byte("12.batch|cpu=00:00:01,mem=2\n"), nil
	}
	c := &Client{Site: f, DataRoot: "/data", Logger: slog.New(&testLog{t: t})}
	for range 2 {
		got, err := c.Usage(context.Background(), []JobID{"12", "13"})
		if err != nil || len(got) != 1 || got["12"].Memory != 2 {
			t.Fatalf("got %+v, %v; want job 12's figures", got, err)
		}
	}
	if n := f.count("sacct"); n != 1 {
		t.Errorf("%d sacct calls; want 1", n)
	}
	// a failing sstat is an error
	f.handle = func([]string) ([]byte, error) { return nil, &site.ExitError{Code: 1, Stderr: "sstat: error: boom"} }
	if _, err := c.Usage(context.Background(), []JobID{"12"}); err == nil || !strings.HasPrefix(err.Error(), "sstat: ") {
		t.Errorf("error %v; want sstat's", err)
	}
	if _, err := c.Usage(context.Background(), []JobID{"12; rm -rf /"}); err == nil {
		t.Error("a malformed job ID was passed to sstat")
	}
}

// Thousands of jobs are asked about in batches of usageBatch steps.
func TestUsageBatches(t *testing.T) {
	f := newFakeSite()
	f.handle = func(args []string) ([]byte, error) {
		var out strings.Builder
		for step := range strings.SplitSeq(args[slices.Index(args, "-j")+1], ",") {
			out.WriteString(step + "|cpu=00:00:01,mem=1\n")
		}
		return []byte(out.String()), nil
	}
	c := &Client{Site: f, DataRoot: "/data", Logger: slog.New(&testLog{t: t})}
	var ids []JobID
	for i := range 2500 {
		ids = append(ids, JobID(strconv.Itoa(i+1)))
	}
	got, err := c.Usage(context.Background(), ids)
	if err != nil || len(got) != len(ids) {
		t.Fatalf("got %d jobs, %v; want %d", len(got), err, len(ids))
	}
	if n := f.count("sstat"); n != 3 {
		t.Errorf("%d sstat calls for 2500 jobs; want 3", n)
	}
}
