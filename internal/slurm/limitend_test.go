package slurm

import (
	"context"
	"testing"
	"time"
)

// A running job's time limit is read from squeue's end time; a pending
// job's end time is a guess, and a finished job's is its end, not a limit.
func TestStatusLimitEnd(t *testing.T) {
	c, f, _ := newTestClient(t)
	running, pending, done, unlimited := c.Ref("lab", uidN(1), "41"), c.Ref("lab", uidN(2), "42"), c.Ref("lab", uidN(3), "43"), c.Ref("lab", uidN(4), "44")
	f.handle = (&slurmFake{squeue: "41|RUNNING|None|node1|1000|1120|" + running.UID + "\n" +
		"42|PENDING|Priority||2000|2120|" + pending.UID + "\n" +
		"43|TIMEOUT|TimeLimit|node1|1000|1120|" + done.UID + "\n" +
		"44|RUNNING|None|node1|1000|Unknown|" + unlimited.UID + "\n"}).handle
	got, err := c.Status(context.Background(), []JobRef{running, pending, done, unlimited})
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	for _, tc := range []struct {
		ref  JobRef
		want time.Time
	}{
		{running, time.Unix(1120, 0).UTC()},
		{pending, time.Time{}},
		{done, time.Time{}},
		{unlimited, time.Time{}},
	} {
		if st := got[tc.ref.UID]; !st.LimitEnd.Equal(tc.want) {
			t.Errorf("job %s (%s): LimitEnd %v; want %v", tc.ref.JobID, st.State, st.LimitEnd, tc.want)
		}
	}
	if st := got[done.UID]; !st.EndTime.Equal(time.Unix(1120, 0)) {
		t.Errorf("the finished job's EndTime is %v; want its end", st.EndTime)
	}
}
