package slurm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/testrig"
)

func TestParseRestarts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "<count> <code> <start unix> <end unix> <reason>", or the error
	}{
		{"1 143 1764700000 1764700009 liveness", "1 143 1764700000 1764700009 liveness"},
		{"999999 0 0 0 postStart", "999999 0 0 0 postStart"},
		{"12 137 1764700000 1764700000 startup", "12 137 1764700000 1764700000 startup"},
		{"0 143 1764700000 1764700009 liveness", "count"},
		{"01 143 1764700000 1764700009 liveness", "count"},
		{"1000000 143 1764700000 1764700009 liveness", "count"},
		{"1 256 1764700000 1764700009 liveness", "exit code"},
		{"1 -1 1764700000 1764700009 liveness", "exit code"},
		{"1 143 1764700009 1764700000 liveness", "before start"},
		{"1 143 1764700000 0 liveness", "end time"},
		{"1 143 17647 1764700009 liveness", "start time"},
		{"1 143 1764700000 1764700009 Unhealthy", "unknown reason"},
		{"1 143 1764700000 1764700009", "4 fields"},
		{"1  143 1764700000 1764700009 liveness", "6 fields"},
		{"", "1 fields"},
	} {
		n, last, err := parseRestarts(tc.in)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			unix := func(tm time.Time) int64 {
				if tm.IsZero() {
					return 0
				}
				return tm.Unix()
			}
			got = fmt.Sprintf("%d %d %d %d %s", n, last.ExitCode, unix(last.StartedAt), unix(last.FinishedAt), last.Reason)
		}
		if err != nil && !strings.Contains(got, tc.want) || err == nil && got != tc.want {
			t.Errorf("parseRestarts(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzParseRestarts: whatever a job writes, a restarts file read has a
// count and exit code in bounds, a known reason and times in order.
func FuzzParseRestarts(f *testing.F) {
	for _, s := range []string{"1 143 1764700000 1764700009 liveness", "3 0 0 0 postStart", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, last, err := parseRestarts(s)
		if err != nil {
			return
		}
		if n < 1 || n > maxRestarts || last.ExitCode < 0 || last.ExitCode > 255 || last.FinishedAt.Before(last.StartedAt) ||
			last.StartedAt.IsZero() != last.FinishedAt.IsZero() {
			t.Fatalf("parseRestarts(%q) = %d, %+v", s, n, last)
		}
		switch last.Reason {
		case KilledByLiveness, KilledByStartup, KilledByPostStart:
		default:
			t.Fatalf("parseRestarts(%q) gave reason %q", s, last.Reason)
		}
	})
}

// TestScanReadsRestarts runs the scan through GNU find and grep over the
// files of a container that ran again, and over hostile ones: a restarts
// file of megabytes, one of junk, a named pipe. The container shows its
// restart count, last termination and startup; while its time file holds
// the killed run's end, it waits for its restart.
func TestScanReadsRestarts(t *testing.T) {
	for _, tool := range []string{"find", "grep", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			testrig.Unavailable(t, "no "+tool+" in PATH")
		}
	}
	root := t.TempDir()
	files := map[string]string{
		"lab-a/main.time":      "1764700000 1764700009\n",
		"lab-a/main.restarts":  "2 143 1764700000 1764700009 liveness\n",
		"lab-a/main.started":   "0\n",
		"lab-a/side.time":      "1764700020\n",
		"lab-a/side.restarts":  "1 1 1764700000 1764700010 startup\n",
		"lab-a/side.started":   "1\n",
		"lab-a/big.restarts":   strings.Repeat("1 143 1764700000 1764700009 liveness\n", 1<<16),
		"lab-a/junk.restarts":  "x 143 1764700000 1764700009 liveness\n",
		"lab-a/wrong.restarts": "1 143 1764700000 1764700009 $(reboot)\n",
		"lab-a/junk.started":   "yes\n",
		"lab-a/done.exit":      "137\n",
		"lab-a/done.killed":    "startup\n",
		"lab-a/odd.killed":     "reboot\n",
	}
	for name, data := range files {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(root, "lab-a/fifo.restarts"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := realScan(ctx, t, root, []string{"lab-a"})
	d := parseScan(out, root)[root+"/lab-a"]
	if d == nil {
		t.Fatalf("scan gave nothing for lab-a:\n%s", out)
	}
	if len(d.restarts) != 2 || len(d.started) != 2 {
		t.Errorf("restarts %+v, started %+v; want main's and side's only:\n%s", d.restarts, d.started, out)
	}
	cs := d.containers()
	main, side := cs["main"], cs["side"]
	if main.RestartCount != 2 || main.LastTermination == nil || main.LastTermination.ExitCode != 143 ||
		main.LastTermination.Reason != KilledByLiveness || main.LastTermination.FinishedAt.Unix() != 1764700009 || !main.BackOff {
		t.Errorf("main = %+v (last %+v); want 2 restarts, the last killed by its liveness probe, in back-off", main, main.LastTermination)
	}
	if main.StartupPassed == nil || *main.StartupPassed || side.StartupPassed == nil || !*side.StartupPassed {
		t.Errorf("startup: main %v, side %v; want false and true", main.StartupPassed, side.StartupPassed)
	}
	if done := cs["done"]; done.KilledBy != KilledByStartup || len(d.killed) != 1 {
		t.Errorf("done = %+v, killed %v; want done killed by its startup probe, alone", done, d.killed)
	}
	if side.RestartCount != 1 || side.BackOff || side.StartedAt.Unix() != 1764700020 {
		t.Errorf("side = %+v; want 1 restart, running again since 1764700020", side)
	}
}
