package slurm

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-hpc/sluice/internal/jobscript"
)

const sampleUID = "0b5b0e4c-7f4e-4d3a-9b1e-2f1f0f6f3c11"

// sampleJob is a small valid job for RuntimeNone.
func sampleJob() *jobscript.Job {
	return &jobscript.Job{
		Namespace: "lab", Name: "train", UID: sampleUID,
		Containers: []jobscript.Container{{Name: "main", Command: []string{"echo", "hi"}, EnvFile: "env/main"}},
		Files: []jobscript.File{
			{Path: "env/main", Data: []byte("A=1\n"), Mode: 0o600},
			{Path: "volumes/cfg/settings.yaml", Data: []byte("x: 1\n"), Mode: 0o644},
			{Path: "volumes/secret/token", Data: []byte("s3cret"), Mode: 0o600},
			{Path: "volumes/cfg/nomode", Data: []byte("x")},
		},
	}
}

// slurmFake answers sbatch, squeue and sacct as tests set them.
type slurmFake struct {
	mu     sync.Mutex
	sbatch string // sbatch's output
	squeue string // squeue's output, whatever the selection
	sacct  string // sacct's output; "disabled" for a site without accounting
}

func (s *slurmFake) setQueue(out string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.squeue = out
}

func (s *slurmFake) handle(args []string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch program(args) {
	case "sbatch":
		return []byte(s.sbatch), nil
	case "squeue":
		return printSqueue(args, queueJobs(s.squeue))
	case "sacct":
		if s.sacct == "disabled" {
			return nil, exitErr(args, 1, "sacct: error: Slurm accounting storage is disabled")
		}
		return printSacct(args, acctJobs(s.sacct))
	}
	return nil, exitErr(args, 127, "not found")
}

func TestSubmitWritesTheJobAndSubmitsIt(t *testing.T) {
	c, f, _ := newTestClient(t)
	sf := &slurmFake{sbatch: "4242\n"}
	f.handle = sf.handle
	id, err := c.Submit(context.Background(), sampleJob())
	if err != nil || id != "4242" {
		t.Fatalf("Submit = %q, %v; want 4242, nil", id, err)
	}
	dir := path.Join(testRoot, "lab-"+sampleUID)
	if mode := f.dirs[dir]; mode != 0o700 {
		t.Errorf("job directory mode = %v; want 0700", mode)
	}
	wantModes := map[string]fs.FileMode{
		"env/main": 0o600, "volumes/cfg/settings.yaml": 0o644, "volumes/secret/token": 0o600,
		"volumes/cfg/nomode": 0o600, "job.sh": 0o700, "job.id": 0o600,
	}
	for name, want := range wantModes {
		ff, ok := f.file(path.Join(dir, name))
		if !ok {
			t.Errorf("%s was not written", name)
			continue
		}
		if ff.mode != want {
			t.Errorf("%s mode = %v; want %v", name, ff.mode, want)
		}
	}
	if ff, _ := f.file(path.Join(dir, "job.id")); ff == nil || string(ff.data) != "4242\n" {
		t.Errorf("job.id = %q; want 4242", ff.data)
	}
	script, _ := f.file(path.Join(dir, "job.sh"))
	if script == nil || !strings.Contains(string(script.data), "--job-name="+sampleUID) {
		t.Errorf("job.sh does not name the job after the pod uid")
	}
	// sbatch is given the script itself, never the path of job.sh, which the
	// account's jobs may swap for a named pipe.
	if got, want := f.lastCall("sbatch"), []string{"sbatch", "--parsable"}; !slices.Equal(got, want) {
		t.Errorf("sbatch args = %q; want %q", got, want)
	}
	f.mu.Lock()
	in := f.stdin["sbatch"]
	f.mu.Unlock()
	if script == nil || !bytes.Equal(in, script.data) {
		t.Errorf("sbatch's standard input is not the script written to job.sh:\n%s", in)
	}
	if got := f.lastCall("squeue"); !slices.Contains(got, "--name="+sampleUID) {
		t.Errorf("squeue args = %q; want a look-up by name", got)
	}
	if got := f.count("sacct"); got != 0 {
		t.Errorf("sacct ran %d times for a job never submitted; want 0", got)
	}
}

func TestSubmitAdopts(t *testing.T) {
	dir := path.Join(testRoot, "lab-"+sampleUID)
	tests := []struct {
		name    string
		setup   func(f *fakeSite)
		slurm   *slurmFake
		want    JobID
		queries []string // programs that must have run
	}{
		{
			name:  "job.id",
			setup: func(f *fakeSite) { f.put(dir+"/job.id", "77\n") },
			want:  "77",
		},
		{
			name:    "squeue by name",
			slurm:   &slurmFake{squeue: "78|RUNNING|None|node1|1|NONE|" + sampleUID + "\n"},
			want:    "78",
			queries: []string{"squeue"},
		},
		{
			name:    "newest of several",
			slurm:   &slurmFake{squeue: "78|FAILED|None|node1|1|2|" + sampleUID + "\n79|PENDING|Priority|n/a|N/A|N/A|" + sampleUID + "\n"},
			want:    "79",
			queries: []string{"squeue"},
		},
		{
			name:    "malformed job.id, squeue by name",
			setup:   func(f *fakeSite) { f.put(dir+"/job.id", "") },
			slurm:   &slurmFake{squeue: "80|COMPLETED|None|node1|1|2|" + sampleUID + "\n"},
			want:    "80",
			queries: []string{"squeue"},
		},
		{
			name:    "sacct by name when job.sh exists",
			setup:   func(f *fakeSite) { f.put(dir+"/job.sh", "#!/bin/sh\n") },
			slurm:   &slurmFake{sacct: "81|COMPLETED|0:0|None|node1|1|2|" + sampleUID + "\n"},
			want:    "81",
			queries: []string{"squeue", "sacct"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f, _ := newTestClient(t)
			if tt.setup != nil {
				tt.setup(f)
			}
			if tt.slurm == nil {
				tt.slurm = &slurmFake{}
			}
			f.handle = tt.slurm.handle
			id, err := c.Submit(context.Background(), sampleJob())
			if err != nil || id != tt.want {
				t.Fatalf("Submit = %q, %v; want %q, nil", id, err, tt.want)
			}
			if got := f.count("sbatch"); got != 0 {
				t.Errorf("sbatch ran %d times; want 0", got)
			}
			for _, q := range tt.queries {
				if f.count(q) != 1 {
					t.Errorf("%s ran %d times; want 1", q, f.count(q))
				}
			}
			got := f.content(dir + "/job.id")
			if strings.TrimSpace(got) != string(tt.want) {
				t.Errorf("job.id holds %q; want %s", got, tt.want)
			}
		})
	}
}

func TestSubmitWithoutAccountingSubmits(t *testing.T) {
	c, f, _ := newTestClient(t)
	f.put(path.Join(testRoot, "lab-"+sampleUID, "job.sh"), "#!/bin/sh\n") // an earlier attempt
	f.handle = (&slurmFake{sbatch: "90;cluster1\n", sacct: "disabled"}).handle
	id, err := c.Submit(context.Background(), sampleJob())
	if err != nil || id != "90" {
		t.Fatalf("Submit = %q, %v; want 90, nil", id, err)
	}
}

func TestSubmitRefuses(t *testing.T) {
	tests := []struct {
		name   string
		change func(j *jobscript.Job)
	}{
		{"uid with a slash", func(j *jobscript.Job) { j.UID = "../etc" }},
		{"uid as a flag", func(j *jobscript.Job) { j.UID = "-rf" }},
		{"upper-case uid", func(j *jobscript.Job) { j.UID = "ABC" }},
		{"long uid", func(j *jobscript.Job) { j.UID = strings.Repeat("a", 64) }},
		{"namespace", func(j *jobscript.Job) { j.Namespace = "Lab" }},
		{"file leaving the directory", func(j *jobscript.Job) { j.Files[0].Path = "../x" }},
		{"absolute file", func(j *jobscript.Job) { j.Files[0].Path = "/etc/passwd" }},
		{"file over job.sh", func(j *jobscript.Job) { j.Files[0].Path = "job.sh" }},
		{"file over a log", func(j *jobscript.Job) { j.Files[0].Path = "main.log" }},
		{"unclean file", func(j *jobscript.Job) { j.Files[0].Path = "volumes//x" }},
		{"script refuses", func(j *jobscript.Job) { j.Containers = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f, _ := newTestClient(t)
			f.handle = (&slurmFake{sbatch: "1\n"}).handle
			job := sampleJob()
			tt.change(job)
			if id, err := c.Submit(context.Background(), job); err == nil {
				t.Fatalf("Submit = %q, nil; want an error", id)
			}
			if got := f.count("sbatch"); got != 0 {
				t.Errorf("sbatch ran %d times; want 0", got)
			}
		})
	}
}

func TestSubmitSbatchFails(t *testing.T) {
	c, f, _ := newTestClient(t)
	f.handle = func(args []string) ([]byte, error) {
		if program(args) == "sbatch" {
			return nil, exitErr(args, 1, "sbatch: error: invalid partition specified: nope")
		}
		return nil, nil
	}
	_, err := c.Submit(context.Background(), sampleJob())
	var rerr *RefusedError
	if !errors.As(err, &rerr) || rerr.Message != "invalid partition specified: nope" {
		t.Fatalf("Submit error = %v; want a *RefusedError with sbatch's message", err)
	}
	if _, ok := f.file(path.Join(testRoot, "lab-"+sampleUID, "job.id")); ok {
		t.Errorf("job.id written for a job that was not submitted")
	}
}

func TestSubmitSbatchFailsForNow(t *testing.T) {
	c, f, _ := newTestClient(t)
	f.handle = func(args []string) ([]byte, error) {
		if program(args) == "sbatch" {
			return nil, exitErr(args, 1, "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)")
		}
		return nil, nil
	}
	_, err := c.Submit(context.Background(), sampleJob())
	var rerr *RefusedError
	if err == nil || errors.As(err, &rerr) || !strings.Contains(err.Error(), "Unable to contact slurm controller") {
		t.Fatalf("Submit error = %v; want sbatch's, to retry", err)
	}
}

func TestParseSbatch(t *testing.T) {
	tests := []struct {
		in   string
		want JobID
		ok   bool
	}{
		{"123\n", "123", true},
		{"123", "123", true},
		{"123;cluster-a\n", "123", true},
		{"Submitted batch job 123\n", "", false},
		{"", "", false},
		{"0\n", "", false},
		{"123;\n", "", false},
		{"123;a b\n", "", false},
		{"12345678901\n", "", false},
		{"123\n456\n", "", false},
	}
	for _, tt := range tests {
		got, err := parseSbatch([]byte(tt.in))
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("parseSbatch(%q) = %q, %v; want %q, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
