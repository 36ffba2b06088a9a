package slurm

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestParseQueueRecord(t *testing.T) {
	uid := "0b5b0e4c-7f4e-4d3a-9b1e-2f1f0f6f3c11"
	tests := []struct {
		line string
		want queueEntry
		ok   bool
	}{
		{
			line: "42|RUNNING|None|node1|1796223352|NONE|" + uid,
			want: queueEntry{ID: "42", State: StateRunning, Host: "node1", Start: time.Unix(1796223352, 0).UTC(), Name: uid},
			ok:   true,
		},
		{
			line: "43|PENDING|Resources|n/a|N/A|N/A|" + uid,
			want: queueEntry{ID: "43", State: StatePending, Reason: "Resources", Host: "n/a", Name: uid},
			ok:   true,
		},
		{
			line: "44|TIMEOUT|TimeLimit|node1|100|200|x",
			want: queueEntry{ID: "44", State: StateTimeout, Reason: "TimeLimit", Host: "node1",
				Start: time.Unix(100, 0).UTC(), End: time.Unix(200, 0).UTC(), Name: "x"},
			ok: true,
		},
		{
			// The name is last, so that it may hold the separator.
			line: "45_[1-3%2]|PENDING|ReqNodeNotAvail, UnavailableNodes:node[2-3]|n/a|Unknown|Unknown|we|ird",
			want: queueEntry{ID: "45_[1-3%2]", State: StatePending, Reason: "ReqNodeNotAvail, UnavailableNodes:node[2-3]",
				Host: "n/a", Name: "we|ird"},
			ok: true,
		},
		{line: "46+1|COMPLETED|None|node1|0|0|", want: queueEntry{ID: "46+1", State: StateCompleted, Host: "node1"}, ok: true},
		{line: "", ok: false},
		{line: "47|RUNNING|None|node1|1|2", ok: false},
		{line: "x47|RUNNING|None|node1|1|2|n", ok: false},
		{line: "47|Running|None|node1|1|2|n", ok: false},
		{line: "47|RUNNING|None|node1|2024-01-02T03:04:05|2|n", ok: false},
		{line: "47|RUNNING|None|node1|1|-2|n", ok: false},
		{line: "47|RUNNING|rm -rf $HOME;|node1|1|2|n", ok: false},
		{line: "-47|RUNNING|None|node1|1|2|n", ok: false},
	}
	for _, tt := range tests {
		got, err := parseQueueRecord(strings.SplitN(tt.line, "|", 7))
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseQueueRecord(%q) = %+v, %v; want %+v, ok %v", tt.line, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseQueueKeepsGoodRecords(t *testing.T) {
	sep := newSeparator()
	rec := func(f ...string) string { return strings.Join(f, sep) + sep + "\n" }
	out := rec("1", "RUNNING", "None", "node1", "10", "NONE", "a") +
		rec("2", "Running", "None", "node1", "10", "NONE", "b") + // no state of Slurm's
		rec("3", "PENDING", "Priority", "n/a", "N/A", "N/A", "c\nwith|newline") +
		rec("\n", "\n", "\n", "\n", "\n", "\n", "\n") + // fields but the name hold no newline
		rec("x4", "PENDING", "Priority", "n/a", "N/A", "N/A", "d") +
		rec("5", "PENDING", "Priority", "n/a", "N/A", "N/A", "\n") + // a name of a newline
		"6" + sep + "RUNNING" // cut short
	entries, err := parseQueue([]byte(out), sep)
	if err == nil || strings.Contains(err.Error(), sep) {
		t.Errorf("parseQueue: error %v; want one, without the separator", err)
	}
	var ids []string
	for _, e := range entries {
		ids = append(ids, e.ID+"="+e.Name)
	}
	if got, want := strings.Join(ids, ","), "1=a,3=c\nwith|newline,5=\n"; got != want {
		t.Errorf("parseQueue entries = %q; want %q", got, want)
	}
}

func TestSeparatorsDiffer(t *testing.T) {
	a, b := newSeparator(), newSeparator()
	if a == b || len(a) != 18 || strings.Trim(a, "|0123456789abcdef") != "" {
		t.Errorf("separators %q, %q; want two different '|'-ended runs of 16 hex digits", a, b)
	}
}

func TestNewestNamed(t *testing.T) {
	entries := []queueEntry{
		{ID: "9", Name: "u"}, {ID: "12", Name: "u"}, {ID: "100", Name: "v"}, {ID: "13_1", Name: "u"},
	}
	e, ok := newestNamed(entries, "u")
	if !ok || e.ID != "12" {
		t.Errorf("newestNamed(u) = %q, %v; want 12, true", e.ID, ok)
	}
	if _, ok := newestNamed(entries, "w"); ok {
		t.Errorf("newestNamed(w) found a job; want none")
	}
}

func TestParseBatchHost(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"node1", "node1", true},
		{"cn-01.cluster.example.org", "cn-01.cluster.example.org", true},
		{"gpu_07", "gpu_07", true},
		{"10.0.0.7", "10.0.0.7", true},
		{"fd00::7", "fd00::7", true},
		{"n/a", "", true},
		{"", "", true},
		{"(null)", "", true},
		{"None assigned", "", true},
		{"-oProxyCommand=x", "", false},
		{"node1;reboot", "", false},
		{"node 1", "", false},
		{"node1\n", "", false},
		{"fe80::1%eth0", "", false},
		{"node[1-2]", "", false},
		{"a..b", "", false},
		{strings.Repeat("a", 64), "", false},
		{"_gpu", "", false},
		{"0x7f", "", false},
		{"10.1", "", false},
	}
	for _, tt := range tests {
		got, err := parseBatchHost(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("parseBatchHost(%q) = %q, %v; want %q, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestFirstNode(t *testing.T) {
	tests := []struct{ in, want string }{
		{"node1", "node1"},
		{"gpu[01-04,07]", "gpu01"},
		{"gpu[07,01-04]", "gpu07"},
		{"a[1-2],b3", "a1"},
		{"b3,a[1-2]", "b3"},
		{"rack[2-3]-n", "rack2-n"},
		{"None assigned", "None assigned"},
		{"broken[1", "broken[1"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := firstNode(tt.in); got != tt.want {
			t.Errorf("firstNode(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestMalformedOutputIsLoggedOnce(t *testing.T) {
	c, f, log := newTestClient(t)
	bad := "x"
	f.handle = func(args []string) ([]byte, error) {
		sep := separatorOf(args)
		return []byte("1" + sep + strings.Join([]string{"RUNNING", "None", "node1", "10", "NONE", "a"}, sep) + sep + "\n" +
			bad + sep + "\n"), nil
	}
	for range 3 {
		entries, err := c.queue(context.Background())
		if err != nil || len(entries) != 1 {
			t.Fatalf("queue = %v, %v; want one entry", entries, err)
		}
	}
	bad = "y"
	if _, err := c.queue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := log.seen("slurm: skipping malformed lines"); got != 2 {
		t.Errorf("logged malformed output %d times; want 2 (once per new kind)", got)
	}
}

// separatorOf is the record separator of a squeue or sacct command line.
func separatorOf(args []string) string {
	for i, a := range args {
		if d, ok := strings.CutPrefix(a, "--delimiter="); ok {
			return d
		}
		if a == "-o" && i+1 < len(args) && strings.HasPrefix(args[i+1], "%i") {
			sep, _, _ := strings.Cut(strings.TrimPrefix(args[i+1], "%i"), "%")
			return sep
		}
	}
	return ""
}
