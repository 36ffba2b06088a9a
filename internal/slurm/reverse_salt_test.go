package slurm

import (
	"bytes"
	"context"
	"net/netip"
	"path"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/salt"
)

// relayAddrOf is the address job's relay holds, as its script has it.
func relayAddrOf(t *testing.T, job *jobscript.Job) netip.Addr {
	t.Helper()
	a, err := job.Reverse.RelayAddr(job.UID)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestSubmitSalt: Submit draws a salt for a new job and keeps it, 0600, in
// the job directory before sbatch runs; a job it adopts gets the salt it was
// submitted with back, so that a restarted sluice-vk tells the shadow the
// same socket directory; one submitted before salts gets "".
func TestSubmitSalt(t *testing.T) {
	ctx := context.Background()
	c, f, _ := newTestClient(t)
	f.handle = (&slurmFake{sbatch: "4242\n"}).handle
	reverseJob := func() *jobscript.Job {
		job := sampleJob()
		job.Reverse = &jobscript.ReverseJob{SocksPort: 1080, SocketDirRoot: "/tmp/s"}
		return job
	}
	job := reverseJob()
	if _, err := c.Submit(ctx, job); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	drawn := job.Reverse.Salt
	if err := salt.Check(drawn); err != nil {
		t.Fatalf("Submit drew salt %q: %v", drawn, err)
	}
	saltPath := path.Join(jobscript.JobDir(c.DataRoot, job.Namespace, job.UID), jobscript.SaltFile)
	if ff, ok := f.file(saltPath); !ok || string(ff.data) != drawn+"\n" || ff.mode != 0o600 {
		t.Fatalf("%s: %+v; want %q, 0600", jobscript.SaltFile, ff, drawn+"\n")
	}
	f.mu.Lock()
	script := f.stdin["sbatch"]
	f.mu.Unlock()
	if name := path.Base(job.Reverse.SocketDir(job.UID)); !bytes.Contains(script, []byte("sluice_rev_dir=$sluice_rev_root/"+name+"\n")) {
		t.Errorf("the submitted script does not name the salted socket directory %s", name)
	}

	adopted := reverseJob()
	if _, err := c.Submit(ctx, adopted); err != nil || adopted.Reverse.Salt != drawn {
		t.Errorf("adopted job's salt %q, %v; want %q, as submitted", adopted.Reverse.Salt, err, drawn)
	}

	if err := f.RemoveAll(ctx, saltPath); err != nil {
		t.Fatal(err)
	}
	old := reverseJob()
	if _, err := c.Submit(ctx, old); err != nil || old.Reverse.Salt != "" {
		t.Errorf("job submitted before salts: salt %q, %v; want \"\", nil", old.Reverse.Salt, err)
	}
	if got := old.Reverse.SocketDir(old.UID); got != path.Join("/tmp/s", old.UID) {
		t.Errorf("its socket directory %s; want the uid's, as its script has it", got)
	}

	f.put(saltPath, "not a salt\n")
	if _, err := c.Submit(ctx, reverseJob()); err == nil || !strings.Contains(err.Error(), jobscript.SaltFile) {
		t.Errorf("adopted job with a malformed salt: got %v; want an error naming %s", err, jobscript.SaltFile)
	}
}
