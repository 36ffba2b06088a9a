package slurm

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
)

// The seed corpora are in testdata/fuzz/<FuzzName>/. Each target checks
// that a parser never panics and that what it accepts is what it promises.

// fuzzSep is the separator the parser fuzz targets read records with.
const fuzzSep = "|0123456789abcdef|"

func FuzzParseQueue(f *testing.F) {
	f.Fuzz(func(t *testing.T, out string) {
		entries, _ := parseQueue([]byte(out), fuzzSep)
		seen := map[string]bool{}
		for _, e := range entries {
			if !anyJobID.MatchString(e.ID) || states[e.State] == (stateInfo{}) || e.State == StateUnknown {
				t.Fatalf("parseQueue(%q) accepted %+v", out, e)
			}
			if strings.Contains(e.ID+string(e.State)+e.Reason+e.Host+e.Name, fuzzSep) ||
				strings.ContainsAny(e.ID+string(e.State)+e.Reason+e.Host, "\n") {
				t.Fatalf("parseQueue(%q) let a separator into a field: %+v", out, e)
			}
			if h, err := parseBatchHost(e.Host); err == nil && h != "" && h[0] == '-' {
				t.Fatalf("batch host %q starts with '-'", h)
			}
			if seen[e.ID] {
				t.Fatalf("parseQueue(%q) gave job %s twice", out, e.ID)
			}
			seen[e.ID] = true
		}
	})
}

func FuzzParseAcct(f *testing.F) {
	f.Fuzz(func(t *testing.T, out string) {
		entries, _ := parseAcct([]byte(out), fuzzSep)
		seen := map[string]bool{}
		for _, e := range entries {
			if !anyJobID.MatchString(e.ID) || e.State == StateUnknown || e.Exit.Code > 255 || e.Exit.Signal > 255 {
				t.Fatalf("parseAcct(%q) accepted %+v", out, e)
			}
			if strings.Contains(e.ID+string(e.State)+e.Reason+e.Host+e.Name, fuzzSep) ||
				strings.ContainsAny(e.ID+string(e.State)+e.Reason+e.Host, "\n") {
				t.Fatalf("parseAcct(%q) let a separator into a field: %+v", out, e)
			}
			if seen[e.ID] {
				t.Fatalf("parseAcct(%q) gave job %s twice", out, e.ID)
			}
			seen[e.ID] = true
		}
	})
}

// FuzzJobNames prints, as squeue and sacct would for sluice's command
// lines, a pod's job and a job of the same account with any name: the pod's
// job always reads as it is, and the other job keeps its own ID and state.
func FuzzJobNames(f *testing.F) {
	f.Add("x\n11|COMPLETED|None|node1|100|200|" + uidN(1))
	f.Add("x\n11|COMPLETED|0:0|None|node1|100|200|" + uidN(1) + "\n")
	f.Add("a|b\n\n|")
	f.Fuzz(func(t *testing.T, name string) {
		sep := newSeparator()
		if strings.Contains(name, sep) {
			t.Skip("the name holds the separator drawn after it was given")
		}
		pod := heldJob{ID: "11", State: "RUNNING", Reason: "None", Host: "node1", Start: "100", End: "NONE", Exit: "0:0", Name: uidN(1)}
		other := heldJob{ID: "12", State: "PENDING", Reason: "Priority", Host: "n/a", Start: "N/A", End: "N/A", Exit: "0:0", Name: name}
		for _, jobs := range [][]heldJob{{pod, other}, {other, pod}} {
			out, err := printSqueue(squeueCmd(sep), jobs)
			if err != nil {
				t.Fatal(err)
			}
			q, err := parseQueue(out, sep)
			if err != nil || len(q) != 2 {
				t.Fatalf("squeue %q: got %+v, %v; want both jobs", out, q, err)
			}
			for _, e := range q {
				if want := map[string]State{"11": StateRunning, "12": StatePending}[e.ID]; e.State != want ||
					e.ID == "11" && e.Name != uidN(1) || e.ID == "12" && e.Name != name {
					t.Fatalf("squeue %q: got %+v", out, e)
				}
			}
			out, err = printSacct(sacctCmd(sep), jobs)
			if err != nil {
				t.Fatal(err)
			}
			a, err := parseAcct(out, sep)
			if err != nil || len(a) != 2 {
				t.Fatalf("sacct %q: got %+v, %v; want both jobs", out, a, err)
			}
			for _, e := range a {
				if want := map[string]State{"11": StateRunning, "12": StatePending}[e.ID]; e.State != want ||
					e.ID == "11" && e.Name != uidN(1) || e.ID == "12" && e.Name != name {
					t.Fatalf("sacct %q: got %+v", out, e)
				}
			}
		}
	})
}

func FuzzParseSbatch(f *testing.F) {
	f.Fuzz(func(t *testing.T, out []byte) {
		id, err := parseSbatch(out)
		if err != nil {
			return
		}
		if _, err := ParseJobID(string(id)); err != nil {
			t.Fatalf("parseSbatch(%q) = %q, which is no job id: %v", out, id, err)
		}
	})
}

func FuzzParseState(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseState(s)
		if err != nil {
			return
		}
		if phase, _ := PodPhase(st); phase == PhaseUnknown || !strings.HasPrefix(s, string(st)) {
			t.Fatalf("ParseState(%q) = %q, phase %s", s, st, phase)
		}
	})
}

func FuzzParseExitCode(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseExitCode(s)
		if err != nil {
			return
		}
		if e.String() != s {
			t.Fatalf("ParseExitCode(%q) = %v, which prints as %q", s, e, e.String())
		}
	})
}

func FuzzParseBatchHost(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		h, err := parseBatchHost(s)
		if err != nil || h == "" {
			return
		}
		if h != s || h[0] == '-' || strings.ContainsAny(h, " \t\n\r;|&$`'\"\\()<>*?[]{}!#~=,/") {
			t.Fatalf("parseBatchHost(%q) = %q", s, h)
		}
	})
}

func FuzzParseScan(f *testing.F) {
	f.Fuzz(func(t *testing.T, out []byte) {
		for dir, d := range parseScan(out, testRoot) {
			if !strings.HasPrefix(dir, testRoot+"/") || strings.Contains(dir[len(testRoot)+1:], "/") {
				t.Fatalf("parseScan gave directory %q", dir)
			}
			for name, code := range d.exits {
				if !isLabel(name) || code < 0 || code > 255 {
					t.Fatalf("parseScan gave exit %q=%d", name, code)
				}
			}
			for name := range d.logs {
				if !isLabel(name) {
					t.Fatalf("parseScan gave log %q", name)
				}
			}
			for name := range d.ready {
				if !isLabel(name) {
					t.Fatalf("parseScan gave readiness %q", name)
				}
			}
			for name, tm := range d.times {
				if !isLabel(name) || tm.start.IsZero() || tm.end.Before(tm.start) && !tm.end.IsZero() {
					t.Fatalf("parseScan gave times %q=%+v", name, tm)
				}
			}
			for name := range d.started {
				if !isLabel(name) {
					t.Fatalf("parseScan gave started %q", name)
				}
			}
			for name, r := range d.restarts {
				if !isLabel(name) || r.count < 1 || r.count > maxRestarts || r.last.ExitCode < 0 || r.last.ExitCode > 255 ||
					r.last.FinishedAt.Before(r.last.StartedAt) || r.last.Reason == "" {
					t.Fatalf("parseScan gave restarts %q=%+v", name, r)
				}
			}
			for name, r := range d.killed {
				if _, err := parseKillReason(string(r)); err != nil || !isLabel(name) {
					t.Fatalf("parseScan gave killed %q=%q", name, r)
				}
			}
			for name, c := range d.containers() {
				if c.RestartCount < 0 || c.BackOff && c.Finished || c.KilledBy != "" && !c.Finished {
					t.Fatalf("containers gave %q=%+v", name, c)
				}
			}
		}
	})
}

// FuzzLogCopy feeds a log in pieces of any size: what comes out is the
// lines with their stamps removed, whatever the pieces.
func FuzzLogCopy(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, cut uint16, limit uint8) {
		var all, pieces bytes.Buffer
		whole := &logCopy{opts: LogOptions{Tail: -1}, w: &all}
		if err := whole.feed(data); err != nil {
			t.Fatal(err)
		}
		if err := whole.flush(); err != nil {
			t.Fatal(err)
		}
		split := &logCopy{opts: LogOptions{Tail: -1}, w: &pieces}
		at := min(int(cut), len(data))
		for _, part := range [][]byte{data[:at], data[at:]} {
			if err := split.feed(part); err != nil {
				t.Fatal(err)
			}
		}
		if err := split.flush(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(all.Bytes(), pieces.Bytes()) {
			t.Fatalf("fed whole: %q; fed in two at %d: %q", all.Bytes(), at, pieces.Bytes())
		}
		if want := stripStamps(data); !bytes.Equal(all.Bytes(), want) {
			t.Fatalf("got %q; want %q", all.Bytes(), want)
		}

		var limited bytes.Buffer
		l := &logCopy{opts: LogOptions{Tail: -1, LimitBytes: int64(limit) + 1, Timestamps: true,
			Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, w: &limited}
		if err := l.feed(data); err == nil {
			_ = l.flush()
		}
		if int64(limited.Len()) > int64(limit)+1 {
			t.Fatalf("wrote %d bytes past a limit of %d", limited.Len(), int(limit)+1)
		}
	})
}

// stripStamps is the plain reading of the log layout: every line that starts
// with a stamp and a space (or is only a stamp) loses them.
func stripStamps(data []byte) []byte {
	var out []byte
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		n := len(jobscript.LogTimeLayout)
		if len(line) >= n {
			if _, err := time.Parse(jobscript.LogTimeLayout, string(line[:n])); err == nil {
				switch {
				case len(line) > n && line[n] == ' ':
					line = line[n+1:]
				case len(line) == n || line[n] == '\n':
					line = line[n:]
				}
			}
		}
		out = append(out, line...)
	}
	return out
}

func FuzzParseSinfo(f *testing.F) {
	f.Fuzz(func(t *testing.T, out string, partition string) {
		nodes, _ := parseSinfo([]byte(out), fuzzSep)
		for _, n := range nodes {
			if !sinfoNodeName.MatchString(n.Name) || !partitionName.MatchString(n.Partition) ||
				n.CPUs < 0 || n.CPUs > maxNodeCPUs || n.MemoryMiB < 0 || n.MemoryMiB > maxNodeMemory {
				t.Fatalf("parseSinfo(%q) accepted %+v", out, n)
			}
			for k, v := range n.GRES {
				if v <= 0 || v > maxNodeGRES || !gresName.MatchString(k.Name) || (k.Type != "" && !gresType.MatchString(k.Type)) {
					t.Fatalf("parseSinfo(%q) accepted GRES %+v=%d", out, k, v)
				}
			}
		}
		var partitions []string
		if partition != "" {
			partitions = []string{partition}
		}
		c, err := sumCapacity(nodes, partitions)
		if err == nil && (c.Nodes == 0 || c.Usable > c.Nodes || c.Available.CPUs > c.Total.CPUs ||
			c.Available.MemoryMiB > c.Total.MemoryMiB || c.Total.CPUs < 0 || c.Total.MemoryMiB < 0) {
			t.Fatalf("sumCapacity(%q, %v) = %+v", out, partitions, c)
		}
	})
}
