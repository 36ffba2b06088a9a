package slurm

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
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
		start := time.Now()
		out, err := (&site.Local{}).Run(ctx, nil, scanCmd(root, names)...)
		cancel()
		if err != nil {
			t.Fatalf("scan of %v after %v: %v", names, time.Since(start), err)
		}
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
