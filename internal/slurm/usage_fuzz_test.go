package slurm

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzParseUsage: sstat and sacct output never panics the parser, and what
// it accepts is a valid job's batch step with figures in range, read at
// the time given. The seeds are the outputs captured from the rig.
func FuzzParseUsage(f *testing.F) {
	names, _ := filepath.Glob(filepath.Join("testdata", "usage", "*.txt"))
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("12.batch|cpu=1-00:00:00.5,mem=3P\n12.batch|cpu=00:00:01,mem=1\n")
	at := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, out string) {
		got, _ := parseUsage([]byte(out), at)
		for id, u := range got {
			if _, err := ParseJobID(string(id)); err != nil {
				t.Fatalf("parseUsage(%q) accepted job %q", out, id)
			}
			if u.CPU < 0 || u.CPU > maxCPUDays*24*time.Hour+time.Second || u.Memory < 0 || u.Memory > maxUsageBytes || !u.Time.Equal(at) {
				t.Fatalf("parseUsage(%q) gave %s %+v", out, id, u)
			}
		}
	})
}

// FuzzParseCPUTime: a CPU time parses within range, and Slurm's
// [D-]HH:MM:SS form of what it parsed reads back the same to the second.
func FuzzParseCPUTime(f *testing.F) {
	for _, s := range []string{"00:00:15", "2-03:04:05", "00:29.003", "12", "213503982334-14:25:51"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseCPUTime(s)
		if err != nil {
			return
		}
		if d < 0 || d > maxCPUDays*24*time.Hour+time.Second {
			t.Fatalf("parseCPUTime(%q) = %v, out of range", s, d)
		}
		secs := int64(d / time.Second)
		form := fmt.Sprintf("%d-%02d:%02d:%02d", secs/86400, secs/3600%24, secs/60%60, secs%60)
		back, err := parseCPUTime(form)
		if err != nil || back != d.Truncate(time.Second) {
			t.Fatalf("parseCPUTime(%q) = %v; its form %q reads %v, %v", s, d, form, back, err)
		}
	})
}
