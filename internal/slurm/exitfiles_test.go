package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/sluice-hpc/sluice/internal/testrig"
)

// TestScanSurvivesHostileExitFiles runs the exit-file scan through GNU find
// and grep over what a job can leave among its exit files: a named pipe, a
// link to one and to /dev/zero, a file of megabytes, a file with no exit
// code. The scan must neither block, nor fail, nor return more than a few
// bytes per file, and must still read the other pods' exit codes.
func TestScanSurvivesHostileExitFiles(t *testing.T) {
	for _, tool := range []string{"find", "grep", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			testrig.Unavailable(t, "no "+tool+" in PATH")
		}
	}
	root := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("lab-good/init.exit", "0\n")
	write("lab-good/main.exit", "3\n")
	write("lab-bad/big.exit", strings.Repeat("1", 8<<20)+"\n")
	write("lab-bad/junk.exit", "x\n")
	write("lab-bad/main.log", "")
	write("lab-bad/huge.time", strings.Repeat("1764700000 ", 1<<20)+"\n")
	write("lab-bad/late.time", "1764700000 1764699999\n")
	if err := syscall.Mkfifo(filepath.Join(root, "lab-bad/fifo.exit"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"lab-bad/zero.exit": "/dev/zero", "lab-bad/pipe.exit": "fifo.exit", "lab-bad/zero.time": "/dev/zero", "lab-bad/pipe.time": "fifo.exit"} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	write("lab-junk/only.exit", "not a code\n")

	for _, names := range [][]string{{"lab-good", "lab-bad", "lab-junk"}, {"lab-junk"}, {"lab-bad"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out := realScan(ctx, t, root, names)
		cancel()
		if len(out) > 1024 {
			t.Errorf("scan of %v gave %d bytes; want a few per file", names, len(out))
		}
		got := parseScan(out, root)
		if names[0] == "lab-good" {
			if d := got[root+"/lab-good"]; d == nil || len(d.exits) != 2 || d.exits["init"] != 0 || d.exits["main"] != 3 {
				t.Errorf("scan of %v: lab-good = %+v; want init 0 and main 3:\n%s", names, d, out)
			}
		}
		if d := got[root+"/lab-bad"]; d != nil && (len(d.exits) != 0 || len(d.times) != 0 || !d.logs["main"] || len(d.logs) != 1) {
			t.Errorf("scan of %v: lab-bad = %+v; want only its main.log:\n%s", names, d, out)
		}
	}
}

// TestScanLeavesOutAFloodedDirectory: a job that fills its directory with
// files named like logs makes the scan's output pass the runner's limit.
// The other pods' results must still be read; that directory alone is left
// out, and logged.
func TestScanLeavesOutAFloodedDirectory(t *testing.T) {
	root := t.TempDir()
	var dirs []string
	for _, name := range []string{"lab-a", "lab-b", "lab-flood", "lab-c", "lab-d"} {
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
		if name == "lab-flood" {
			for i := range 2000 {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("c%d.log", i)), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, "main.exit"), []byte("7\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	log := &testLog{t: t}
	c := &Client{Site: &site.Local{MaxStdout: 16 << 10}, DataRoot: root, Logger: slog.New(log)}
	files, err := c.scan(context.Background(), dirs)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	for _, dir := range dirs {
		d := files[dir]
		switch {
		case filepath.Base(dir) == "lab-flood" && d != nil:
			t.Errorf("the flooded directory is in the result with %d logs; want it left out", len(d.logs))
		case filepath.Base(dir) != "lab-flood" && (d == nil || d.exits["main"] != 7):
			t.Errorf("scan of %s = %+v; want main's exit code 7", dir, d)
		}
	}
	if n := log.seen("slurm: job directory too full to scan; its containers' results come from Slurm alone"); n != 1 {
		t.Errorf("logged the flooded directory %d times; want once", n)
	}
}

// realScan runs both scans of names under root through GNU find
// (site.Local) and returns scanCmd's output, having checked that
// dirScanCmd lists the same lines or, when a named directory is missing,
// fails with exit status 1 as runScan expects.
func realScan(ctx context.Context, t *testing.T, root string, names []string) []byte {
	t.Helper()
	walk, err := (&site.Local{}).Run(ctx, nil, scanCmd(root, names)...)
	if err != nil {
		t.Fatalf("scan of %v: %v", names, err)
	}
	missing := false
	for _, name := range names {
		if _, err := os.Stat(filepath.Join(root, name)); err != nil {
			missing = true
		}
	}
	dirs, err := (&site.Local{}).Run(ctx, nil, dirScanCmd(root, names)...)
	var exit *site.ExitError
	switch {
	case missing && (!errors.As(err, &exit) || exit.Code != 1):
		t.Errorf("scan from the directories %v, one missing: got %v; want exit status 1", names, err)
	case !missing && err != nil:
		t.Errorf("scan from the directories %v: %v", names, err)
	case !missing && !slices.Equal(sortedLines(dirs), sortedLines(walk)):
		t.Errorf("scan from the directories %v listed\n%s\nthe walk of the root\n%s", names, dirs, walk)
	}
	return walk
}

func sortedLines(b []byte) []string {
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	slices.Sort(lines)
	return lines
}

// TestScanSplitsLongCommandLines: the names of 3,000 job directories do not
// fit one command line that sshd can hand the shell; the scan takes a few
// commands, each within maxScanLine, and reads every directory.
func TestScanSplitsLongCommandLines(t *testing.T) {
	c, f, _ := newTestClient(t)
	ns := strings.Repeat("n", 40)
	var dirs []string
	for i := range 3000 {
		dir := c.Ref(ns, uidN(i), JobID(fmt.Sprint(100+i))).Dir
		f.put(dir+"/main.exit", fmt.Sprintf("%d\n", i%200))
		dirs = append(dirs, dir)
	}
	files, err := c.scan(context.Background(), dirs)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	finds := f.allCalls("find")
	if len(finds) < 2 || len(finds) > 6 {
		t.Errorf("the scan took %d commands; want 2 to 6", len(finds))
	}
	for _, args := range finds {
		if n := len("exec " + site.Join(args)); n > maxScanLine {
			t.Errorf("a scan's command line is %d bytes; want at most %d", n, maxScanLine)
		}
		if args[1] == testRoot {
			t.Errorf("the scan walked the data root; want it to start at the directories")
		}
	}
	for i, dir := range dirs {
		if d := files[dir]; d == nil || d.exits["main"] != i%200 {
			t.Fatalf("scan of %s = %+v; want main's exit code %d", dir, d, i%200)
		}
	}
}

// TestScanBatchesFitTheLimit: every batch's commands fit maxScanLine, and
// the batches keep every name once, in order.
func TestScanBatchesFitTheLimit(t *testing.T) {
	root := "/home/" + strings.Repeat("r", 200)
	for _, n := range []int{1, 10, 1000, 5000} {
		var names []string
		for i := range n {
			names = append(names, fmt.Sprintf("%s-%s", strings.Repeat("x", 1+i%63), uidN(i)))
		}
		batches := scanBatches(root, names)
		var got []string
		for _, b := range batches {
			for _, cmd := range [][]string{scanCmd(root, b), dirScanCmd(root, b)} {
				if l := len("exec " + site.Join(cmd)); l > maxScanLine {
					t.Errorf("%d names: a batch of %d gives a command line of %d bytes; want at most %d", n, len(b), l, maxScanLine)
				}
			}
			got = append(got, b...)
		}
		if !slices.Equal(got, names) {
			t.Errorf("%d names: the batches hold %d names; want them all, in order", n, len(got))
		}
	}
}

// TestScanFallsBackToTheWalk: a directory gone as the poll runs fails the
// scan from the directories; the walk of the data root then reads the
// others, as before.
func TestScanFallsBackToTheWalk(t *testing.T) {
	if _, err := exec.LookPath("find"); err != nil {
		testrig.Unavailable(t, "no find in PATH")
	}
	root := t.TempDir()
	for _, name := range []string{"lab-a", "lab-b"} {
		if err := os.Mkdir(filepath.Join(root, name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name, "main.exit"), []byte("4\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		names []string
		finds int
	}{{[]string{"lab-a", "lab-b"}, 1}, {[]string{"lab-a", "lab-gone", "lab-b"}, 2}} {
		r := &recordingRunner{Runner: &site.Local{}}
		c := &Client{Site: r, DataRoot: root, Logger: slog.New(&testLog{t: t})}
		var dirs []string
		for _, name := range tc.names {
			dirs = append(dirs, filepath.Join(root, name))
		}
		files, err := c.scan(context.Background(), dirs)
		if err != nil {
			t.Fatalf("scan of %v: %v", tc.names, err)
		}
		if len(r.calls) != tc.finds {
			t.Errorf("scan of %v took %d commands; want %d", tc.names, len(r.calls), tc.finds)
		}
		for _, name := range []string{"lab-a", "lab-b"} {
			if d := files[filepath.Join(root, name)]; d == nil || d.exits["main"] != 4 {
				t.Errorf("scan of %v: %s = %+v; want main's exit code 4", tc.names, name, d)
			}
		}
		if len(files) != 2 {
			t.Errorf("scan of %v found %d directories; want 2", tc.names, len(files))
		}
	}
}

// recordingRunner records the commands it runs.
type recordingRunner struct {
	site.Runner
	calls [][]string
}

func (r *recordingRunner) Run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	r.calls = append(r.calls, args)
	return r.Runner.Run(ctx, stdin, args...)
}

// BenchmarkScan5000 scans 5,000 job directories through GNU find, walking
// the data root with every name (scanCmd) against starting at the
// directories (dirScanCmd), in the batches scan makes.
func BenchmarkScan5000(b *testing.B) {
	if _, err := exec.LookPath("find"); err != nil {
		b.Skip("no find in PATH")
	}
	root := b.TempDir()
	var names []string
	for i := range 5000 {
		name := "bench-" + uidN(i)
		if err := os.Mkdir(filepath.Join(root, name), 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name, "main.log"), nil, 0o600); err != nil {
			b.Fatal(err)
		}
		names = append(names, name)
	}
	for _, scan := range []struct {
		name string
		cmd  func(string, []string) []string
	}{{"walk", scanCmd}, {"dirs", dirScanCmd}} {
		b.Run(scan.name, func(b *testing.B) {
			for b.Loop() {
				lines := 0
				for _, batch := range scanBatches(root, names) {
					out, err := (&site.Local{}).Run(context.Background(), nil, scan.cmd(root, batch)...)
					if err != nil {
						b.Fatal(err)
					}
					lines += bytes.Count(out, []byte("\n"))
				}
				if lines != len(names) {
					b.Fatalf("%d lines; want %d", lines, len(names))
				}
			}
		})
	}
}
