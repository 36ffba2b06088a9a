package slurm

import (
	"context"
	"io/fs"
	"path"
	"strings"
	"testing"
)

// TestSubmitIgnoresHostileJobID adopts by name the job of a pod whose job.id
// the job replaced: with megabytes after a job ID, or with a named pipe or a
// link. job.id is read only up to maxIDFile bytes, never opened when it is
// not a regular file, and written again with the job found.
func TestSubmitIgnoresHostileJobID(t *testing.T) {
	dir := path.Join(testRoot, "lab-"+sampleUID)
	for _, tt := range []struct {
		name  string
		setup func(f *fakeSite)
	}{
		{"megabytes", func(f *fakeSite) { f.put(dir+"/job.id", "77\n"+strings.Repeat("\n", 4<<20)) }},
		{"just too long", func(f *fakeSite) { f.put(dir+"/job.id", "77"+strings.Repeat(" ", maxIDFile-1)) }},
		{"named pipe", func(f *fakeSite) { f.special(dir+"/job.id", fs.ModeNamedPipe) }},
		{"symbolic link", func(f *fakeSite) { f.special(dir+"/job.id", fs.ModeSymlink) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, f, log := newTestClient(t)
			tt.setup(f)
			f.handle = (&slurmFake{squeue: "80|RUNNING|None|node1|1|NONE|" + sampleUID + "\n"}).handle
			id, err := c.Submit(context.Background(), sampleJob())
			if err != nil || id != "80" {
				t.Fatalf("Submit = %q, %v; want the job found by name, 80", id, err)
			}
			if got := f.bytesRead(); got > maxIDFile+1 {
				t.Errorf("read %d bytes of job.id; want at most %d", got, maxIDFile+1)
			}
			if n := log.seen("slurm: ignoring malformed job.id"); n != 1 {
				t.Errorf("logged %d warnings about job.id; want 1", n)
			}
			ff, ok := f.file(dir + "/job.id")
			if !ok || string(ff.data) != "80\n" || !ff.mode.IsRegular() {
				t.Errorf("job.id after adoption = %+v; want a regular file holding 80", ff)
			}
		})
	}
}

func TestSubmitReadsAJobIDOfTheLongestLength(t *testing.T) {
	c, f, _ := newTestClient(t)
	dir := path.Join(testRoot, "lab-"+sampleUID)
	f.put(dir+"/job.id", "4294967294"+strings.Repeat(" ", maxIDFile-11)+"\n")
	id, err := c.Submit(context.Background(), sampleJob())
	if err != nil || id != "4294967294" {
		t.Errorf("Submit = %q, %v; want the ID of job.id", id, err)
	}
}
