package slurm

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/testrig"
)

// uidN is the UID of the n-th test pod.
func uidN(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

func TestStatusOfTwentyJobsIsOneSqueue(t *testing.T) {
	c, f, _ := newTestClient(t)
	var queue strings.Builder
	var refs []JobRef
	for i := 1; i <= 20; i++ {
		ref := c.Ref("lab", uidN(i), JobID(fmt.Sprint(100+i)))
		refs = append(refs, ref)
		fmt.Fprintf(&queue, "%d|RUNNING|None|node1|1000|NONE|%s\n", 100+i, ref.UID)
		f.put(ref.Dir+"/main.log", "2026-01-01T00:00:00Z hi\n")
	}
	f.handle = (&slurmFake{squeue: queue.String()}).handle
	got, err := c.Status(context.Background(), refs)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	if n := f.count("squeue"); n != 1 {
		t.Errorf("squeue ran %d times; want 1", n)
	}
	if n := f.count("sacct"); n != 0 {
		t.Errorf("sacct ran %d times; want 0", n)
	}
	if n := f.count("find"); n != 1 {
		t.Errorf("the exit files took %d commands; want 1", n)
	}
	if len(f.calls) != 2 {
		t.Errorf("Status ran %d commands; want 2", len(f.calls))
	}
	for _, ref := range refs {
		st := got[ref.UID]
		if st.State != StateRunning || st.JobID != ref.JobID || st.BatchHost != "node1" || st.Source != SourceSqueue {
			t.Errorf("Status[%s] = %+v; want RUNNING job %s on node1 from squeue", ref.UID, st, ref.JobID)
		}
		if cs := st.Containers["main"]; !cs.Started || cs.Finished {
			t.Errorf("Status[%s] main = %+v; want started, not finished", ref.UID, cs)
		}
	}
}

func TestStatusFallsBack(t *testing.T) {
	c, f, _ := newTestClient(t)
	queued := c.Ref("lab", uidN(1), "11")    // in squeue, finished
	pending := c.Ref("lab", uidN(2), "12")   // in squeue, waiting
	accounted := c.Ref("lab", uidN(3), "13") // in sacct only
	filed := c.Ref("lab", uidN(4), "14")     // in neither, wrote job.exit
	lost := c.Ref("lab", uidN(5), "15")      // nowhere
	named := c.Ref("lab", uidN(6), "")       // no job ID yet: found by name
	reused := c.Ref("lab", uidN(7), "17")    // its ID now names another job

	f.handle = (&slurmFake{
		squeue: strings.Join([]string{
			"11|FAILED|NonZeroExitCode|node1|100|200|" + queued.UID,
			"12|PENDING|Resources|n/a|5000|6000|" + pending.UID,
			"16|RUNNING|None|10.0.0.9|300|NONE|" + named.UID,
			"17|RUNNING|None|node1|300|NONE|someone-else",
		}, "\n") + "\n",
		sacct: "13|OUT_OF_MEMORY|0:125|None|node[2-3]|100|150|" + accounted.UID + "\n" +
			"17|RUNNING|0:0|None|node1|300|Unknown|someone-else\n",
	}).handle
	f.put(queued.Dir+"/init.log", "")
	f.put(queued.Dir+"/init.exit", "0\n")
	f.put(queued.Dir+"/main.log", "")
	f.put(queued.Dir+"/main.exit", "3\n")
	f.put(queued.Dir+"/side.log", "")
	f.put(queued.Dir+"/job.exit", "3\n")
	f.put(pending.Dir+"/main.exit", "9\n") // left by an earlier run: not read
	f.put(filed.Dir+"/main.log", "")
	f.put(filed.Dir+"/main.exit", "0\n")
	f.put(filed.Dir+"/job.exit", "0\n")
	f.put(filed.Dir+"/job.sh", "#!/bin/sh\n")
	f.put(filed.Dir+"/volumes/x/y.exit", "1\n")

	refs := []JobRef{queued, pending, accounted, filed, lost, named, reused}
	got, err := c.Status(context.Background(), refs)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	// find twice: the scan from the job directories fails on those that
	// are missing (accounted's, lost's, ...), and the walk of the data root
	// reads the others
	for prog, want := range map[string]int{"squeue": 1, "sacct": 1, "find": 2} {
		if n := f.count(prog); n != want {
			t.Errorf("%s ran %d times; want %d", prog, n, want)
		}
	}
	if args := f.lastCall("sacct"); !slices.Contains(args, "13,14,15,17") {
		t.Errorf("sacct args = %q; want the jobs squeue did not show", args)
	}

	check := func(ref JobRef, want Status) {
		t.Helper()
		st := got[ref.UID]
		if st.JobID != want.JobID || st.State != want.State || st.Source != want.Source ||
			st.BatchHost != want.BatchHost || !st.StartTime.Equal(want.StartTime) || !st.EndTime.Equal(want.EndTime) ||
			fmt.Sprint(st.Exit) != fmt.Sprint(want.Exit) || fmt.Sprint(st.Containers) != fmt.Sprint(want.Containers) ||
			!strings.Contains(st.Reason, want.Reason) {
			t.Errorf("Status[%s] = %+v; want %+v", ref.UID, st, want)
		}
	}
	check(queued, Status{JobID: "11", State: StateFailed, Reason: "NonZeroExitCode", BatchHost: "node1",
		StartTime: time.Unix(100, 0), EndTime: time.Unix(200, 0), Exit: &ExitCode{Code: 3}, Source: SourceSqueue,
		Containers: map[string]ContainerStatus{
			"init": {Started: true, Finished: true},
			"main": {Started: true, Finished: true, ExitCode: 3},
			"side": {Started: true},
		}})
	check(pending, Status{JobID: "12", State: StatePending, Reason: "Resources", Source: SourceSqueue})
	check(accounted, Status{JobID: "13", State: StateOutOfMemory, BatchHost: "node2", StartTime: time.Unix(100, 0),
		EndTime: time.Unix(150, 0), Exit: &ExitCode{Code: 0, Signal: 125}, Source: SourceSacct, Containers: map[string]ContainerStatus{}})
	check(filed, Status{JobID: "14", State: StateCompleted, Exit: &ExitCode{}, Source: SourceFiles,
		Containers: map[string]ContainerStatus{"main": {Started: true, Finished: true}}})
	check(lost, Status{JobID: "15", State: StateUnknown, Reason: "job 15 is known to neither squeue nor sacct", Source: SourceNone})
	check(named, Status{JobID: "16", State: StateRunning, BatchHost: "10.0.0.9", StartTime: time.Unix(300, 0), Source: SourceSqueue})
	check(reused, Status{JobID: "17", State: StateUnknown, Reason: "known to neither", Source: SourceNone})
}

func TestStatusWithoutAccounting(t *testing.T) {
	c, f, log := newTestClient(t)
	ref := c.Ref("lab", uidN(1), "21")
	f.handle = (&slurmFake{sacct: "disabled"}).handle
	f.put(ref.Dir+"/job.exit", "1\n")
	for range 2 {
		got, err := c.Status(context.Background(), []JobRef{ref})
		if err != nil {
			t.Fatalf("Status: %v", err)
		}
		if st := got[ref.UID]; st.State != StateFailed || st.Source != SourceFiles || st.Exit == nil || st.Exit.Code != 1 {
			t.Errorf("Status = %+v; want FAILED with exit 1 from the files", st)
		}
	}
	if n := f.count("sacct"); n != 1 {
		t.Errorf("sacct ran %d times; want 1", n)
	}
	if n := log.seen("sacct: accounting unavailable at the site; using exit files only"); n != 1 {
		t.Errorf("the fallback was logged %d times; want once", n)
	}
}

func TestStatusDropsBadBatchHost(t *testing.T) {
	c, f, log := newTestClient(t)
	ref := c.Ref("lab", uidN(1), "31")
	f.handle = (&slurmFake{squeue: "31|RUNNING|None|-oProxyCommand=sh|1|NONE|" + ref.UID + "\n"}).handle
	got, err := c.Status(context.Background(), []JobRef{ref})
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	if st := got[ref.UID]; st.State != StateRunning || st.BatchHost != "" {
		t.Errorf("Status = %+v; want RUNNING with no batch host", st)
	}
	if log.seen("slurm: dropping batch host") != 1 {
		t.Errorf("the dropped batch host was not logged")
	}
}

func TestStatusRefusesBadRefs(t *testing.T) {
	c, f, _ := newTestClient(t)
	good := c.Ref("lab", uidN(1), "1")
	bad := []JobRef{
		{UID: "../x", Dir: testRoot + "/lab-../x"},
		{UID: uidN(2), Dir: "/etc"},
		{UID: uidN(3), Dir: testRoot + "/lab-" + uidN(4)},
		{UID: uidN(5), Dir: testRoot + "/x/lab-" + uidN(5)},
		{UID: uidN(6), JobID: "1;reboot", Dir: testRoot + "/lab-" + uidN(6)},
	}
	f.handle = (&slurmFake{squeue: "1|PENDING|None|n/a|N/A|N/A|" + good.UID + "\n"}).handle
	got, err := c.Status(context.Background(), append(bad, good))
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	for _, ref := range bad {
		if st := got[ref.UID]; st.State != StateUnknown || st.Reason == "" {
			t.Errorf("Status[%q] = %+v; want UNKNOWN with a reason", ref.UID, st)
		}
	}
	if st := got[good.UID]; st.State != StatePending {
		t.Errorf("Status[good] = %+v; want PENDING", st)
	}
	for _, call := range f.calls {
		for _, a := range call {
			if strings.Contains(a, "reboot") || a == "/etc" {
				t.Errorf("a bad reference reached a command: %q", call)
			}
		}
	}
}

func TestStatusSqueueFails(t *testing.T) {
	c, f, _ := newTestClient(t)
	f.handle = func(args []string) ([]byte, error) {
		return nil, exitErr(args, 1, "squeue: error: Unable to contact slurm controller")
	}
	if _, err := c.Status(context.Background(), []JobRef{c.Ref("lab", uidN(1), "1")}); err == nil {
		t.Fatalf("Status: got no error; want squeue's")
	}
}

// TestScanWithRealFind runs the exit-file scan through GNU find on a local
// directory tree, as the site runs it.
func TestScanWithRealFind(t *testing.T) {
	if _, err := exec.LookPath("find"); err != nil {
		testrig.Unavailable(t, "no find in PATH")
	}
	root := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("lab-a/main.log", "2026-01-02T03:04:05Z x\n")
	write("lab-a/main.exit", "3\n")
	write("lab-a/job.exit", "3\n")
	write("lab-a/side.log", "")
	write("lab-a/main.exit.tmp", "9\n")
	write("lab-a/volumes/v/deep.exit", "7\n")
	write("lab-a/weird name.exit", "8\n")
	write("lab-a/main.time", "1764700000 1764700005\n")
	write("lab-a/side.time", "junk\n1764700001\n")
	write("lab-a/side.ready", "1\n")
	write("lab-a/main.ready", "7\n")
	write("lab-b/init.exit", "0\n")
	write("lab-b/init.time", "1764700000 1764699999\n") // ends before it starts
	write("lab-other/main.exit", "5\n")
	out := realScan(context.Background(), t, root, []string{"lab-a", "lab-b", "lab-missing"})
	got := parseScan(out, root)
	want := map[string]string{
		root + "/lab-a": "main:started,finished,3,1764700000,1764700005,- side:started,running,0,1764700001,-,ready 3",
		root + "/lab-b": "init:started,finished,0,-,-,- -",
	}
	if len(got) != len(want) {
		t.Errorf("scan found %d directories; want %d:\n%s", len(got), len(want), out)
	}
	for dir, w := range want {
		d := got[dir]
		if d == nil {
			t.Errorf("scan found nothing in %s", dir)
			continue
		}
		job := "-"
		if code, ok := d.exits[jobName]; ok {
			job = fmt.Sprint(code)
		}
		if g := containersText(d.containers()) + " " + job; g != w {
			t.Errorf("scan of %s = %s; want %s", dir, g, w)
		}
	}
}

// containersText writes container results in name order, one word each:
// "<name>:started|waiting,finished|running,<code>,<start>,<end>,<ready>",
// times in seconds since the epoch or "-", ready "-" when not known.
func containersText(cs map[string]ContainerStatus) string {
	unix := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return fmt.Sprint(t.Unix())
	}
	var words []string
	for _, name := range slices.Sorted(maps.Keys(cs)) {
		c := cs[name]
		started, finished := "waiting", "running"
		if c.Started {
			started = "started"
		}
		if c.Finished {
			finished = "finished"
		}
		ready := "-"
		if c.Ready != nil {
			ready = map[bool]string{true: "ready", false: "unready"}[*c.Ready]
		}
		words = append(words, fmt.Sprintf("%s:%s,%s,%d,%s,%s,%s", name, started, finished, c.ExitCode, unix(c.StartedAt), unix(c.FinishedAt), ready))
	}
	return strings.Join(words, " ")
}
