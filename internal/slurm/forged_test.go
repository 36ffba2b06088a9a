package slurm

import (
	"context"
	"strings"
	"testing"
)

// A job of the same account may be named with newlines and copies of other
// jobs' fields. Whatever its name, Status must read every pod's job as
// Slurm holds it: never in a state it does not have.
func TestStatusNotForgedByJobNames(t *testing.T) {
	victim, other := uidN(1), uidN(2)
	forge := func(lines ...string) string { return "x\n" + strings.Join(lines, "\n") }
	running := heldJob{ID: "11", State: "RUNNING", Reason: "None", Host: "node1", Start: "100", End: "NONE", Name: victim}
	tests := []struct {
		name   string
		queue  []heldJob
		acct   []heldJob
		refs   map[string]JobID // pod UID → job ID
		want   map[string]State
		source Source // of the victim's status
	}{
		{
			name: "forged line after the victim's",
			queue: []heldJob{running,
				{ID: "12", State: "RUNNING", Reason: "None", Host: "node1", Start: "100", End: "NONE",
					Name: forge("11|COMPLETED|None|node1|100|200|" + victim)}},
			refs: map[string]JobID{victim: "11"},
			want: map[string]State{victim: StateRunning}, source: SourceSqueue,
		},
		{
			name: "forged line before the victim's",
			queue: []heldJob{
				{ID: "10", State: "RUNNING", Reason: "None", Host: "node1", Start: "100", End: "NONE",
					Name: forge("11|COMPLETED|None|node1|100|200|"+victim, "y")},
				running},
			refs: map[string]JobID{victim: "11"},
			want: map[string]State{victim: StateRunning}, source: SourceSqueue,
		},
		{
			name: "forged line for a job squeue forgot",
			queue: []heldJob{{ID: "12", State: "RUNNING", Reason: "None", Host: "node1", Start: "100", End: "NONE",
				Name: forge("11|COMPLETED|None|node1|100|200|" + victim)}},
			acct: []heldJob{{ID: "11", State: "FAILED", Exit: "1:0", Reason: "None", Host: "node1", Start: "100",
				End: "200", Name: victim}},
			refs: map[string]JobID{victim: "11"},
			want: map[string]State{victim: StateFailed}, source: SourceSacct,
		},
		{
			name: "forged line for a job not yet known by ID",
			queue: []heldJob{{ID: "12", State: "RUNNING", Reason: "None", Host: "node1", Start: "100", End: "NONE",
				Name: forge("99|COMPLETED|None|node1|100|200|" + victim)}},
			refs: map[string]JobID{victim: ""},
			want: map[string]State{victim: StateUnknown}, source: SourceNone,
		},
		{
			name: "forged sacct line from another pod's renamed job",
			acct: []heldJob{
				{ID: "11", State: "FAILED", Exit: "1:0", Reason: "None", Host: "node1", Start: "100", End: "200", Name: victim},
				{ID: "12", State: "COMPLETED", Exit: "0:0", Reason: "None", Host: "node1", Start: "100", End: "200",
					Name: forge("11|COMPLETED|0:0|None|node1|100|200|" + victim)},
			},
			refs: map[string]JobID{victim: "11", other: "12"},
			want: map[string]State{victim: StateFailed, other: StateUnknown}, source: SourceSacct,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f, _ := newTestClient(t)
			f.handle = func(args []string) ([]byte, error) {
				switch program(args) {
				case "squeue":
					return printSqueue(args, tt.queue)
				case "sacct":
					return printSacct(args, tt.acct)
				}
				return nil, exitErr(args, 127, "not found")
			}
			var refs []JobRef
			for uid, id := range tt.refs {
				refs = append(refs, c.Ref("lab", uid, id))
			}
			got, err := c.Status(context.Background(), refs)
			if err != nil {
				t.Fatalf("Status: %v", err)
			}
			for uid, want := range tt.want {
				if st := got[uid]; st.State != want {
					t.Errorf("Status[%s] = %+v; want %s", uid, st, want)
				}
			}
			if st := got[victim]; st.Source != tt.source {
				t.Errorf("the victim's status came from %q; want %q", st.Source, tt.source)
			}
		})
	}
}

// An ID listed twice in one answer cannot be told apart: both are dropped.
func TestRepeatedJobIDsAreDropped(t *testing.T) {
	c, f, log := newTestClient(t)
	f.handle = (&slurmFake{squeue: "7|RUNNING|None|node1|1|NONE|a\n8|PENDING|None|n/a|N/A|N/A|b\n7|COMPLETED|None|node1|1|2|a\n",
		sacct: "5|FAILED|1:0|None|node1|1|2|c\n5|COMPLETED|0:0|None|node1|1|2|c\n6|FAILED|1:0|None|node1|1|2|d\n"}).handle
	entries, err := c.queue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].ID != "8" {
		t.Errorf("queue = %+v; want job 8 alone", entries)
	}
	acct, err := c.accounting(context.Background(), "-j", "5,6")
	if err != nil {
		t.Fatal(err)
	}
	if len(acct) != 1 || acct[0].ID != "6" {
		t.Errorf("accounting = %+v; want job 6 alone", acct)
	}
	if n := log.seen("slurm: skipping malformed lines"); n != 2 {
		t.Errorf("logged the repeated IDs %d times; want once per command", n)
	}
}
