package slurm

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestParseAcctRecord(t *testing.T) {
	tests := []struct {
		line string
		want acctEntry
		ok   bool
	}{
		{
			line: "7|COMPLETED|0:0|None|node1|100|160|uid-1",
			want: acctEntry{ID: "7", State: StateCompleted, Host: "node1", Start: time.Unix(100, 0).UTC(),
				End: time.Unix(160, 0).UTC(), Name: "uid-1"},
			ok: true,
		},
		{
			line: "8|CANCELLED by 1001|0:15|None|gpu[01-02]|100|160|a|b",
			want: acctEntry{ID: "8", State: StateCancelled, Exit: ExitCode{0, 15}, Host: "gpu01",
				Start: time.Unix(100, 0).UTC(), End: time.Unix(160, 0).UTC(), Name: "a|b"},
			ok: true,
		},
		{
			line: "9|PENDING|0:0|Priority|None assigned|Unknown|Unknown|p",
			want: acctEntry{ID: "9", State: StatePending, Reason: "Priority", Host: "None assigned", Name: "p"},
			ok:   true,
		},
		{line: "10|OUT_OF_MEMORY|0:125|None|node1|1|2|m", want: acctEntry{ID: "10", State: StateOutOfMemory,
			Exit: ExitCode{0, 125}, Host: "node1", Start: time.Unix(1, 0).UTC(), End: time.Unix(2, 0).UTC(), Name: "m"}, ok: true},
		{line: "10|COMPLETED|0|None|node1|1|2|m", ok: false},
		{line: "10|COMPLETED|0:0|None|node1|1|2", ok: false},
		{line: "10.batch|COMPLETED|0:0|None|node1|1|2|batch", ok: false},
		{line: "10|DONE|0:0|None|node1|1|2|m", ok: false},
		{line: "10|COMPLETED|0:0|None|node1|yesterday|2|m", ok: false},
		{line: "", ok: false},
	}
	for _, tt := range tests {
		got, err := parseAcctRecord(strings.SplitN(tt.line, "|", 8))
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseAcctRecord(%q) = %+v, %v; want %+v, ok %v", tt.line, got, err, tt.want, tt.ok)
		}
	}
}

func TestAccountingDisabledIsRememberedAndLoggedOnce(t *testing.T) {
	c, f, log := newTestClient(t)
	f.handle = func(args []string) ([]byte, error) {
		return nil, exitErr(args, 1, "sacct: error: Slurm accounting storage is disabled")
	}
	for range 3 {
		entries, err := c.accounting(context.Background(), "-j", "1")
		if err != nil || entries != nil {
			t.Fatalf("accounting = %v, %v; want nothing and no error", entries, err)
		}
	}
	if got := f.count("sacct"); got != 1 {
		t.Errorf("sacct ran %d times; want 1", got)
	}
	if got := log.seen("sacct: accounting unavailable at the site; using exit files only"); got != 1 {
		t.Errorf("logged the fallback %d times; want 1", got)
	}
}

func TestAccountingOtherErrorsAreReturned(t *testing.T) {
	c, f, _ := newTestClient(t)
	f.handle = func(args []string) ([]byte, error) {
		return nil, exitErr(args, 1, "sacct: error: slurmdbd: Connection refused")
	}
	for range 2 {
		if _, err := c.accounting(context.Background(), "-j", "1"); err == nil {
			t.Fatalf("accounting: got no error; want the failure")
		}
	}
	if got := f.count("sacct"); got != 2 {
		t.Errorf("sacct ran %d times; want 2 (a passing failure is not remembered)", got)
	}
}
