package slurm

import (
	"context"
	"encoding/json"
	"maps"
	"path"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/jobscript"
)

// TestSubmittedAnnotations: Submit keeps the annotations a job was made
// with, 0600, in its job directory before sbatch runs, and Submitted gives
// them back; a job that kept none (submitted before them), or whose file
// does not hold them, gives nil, never an error that would hold the pod.
func TestSubmittedAnnotations(t *testing.T) {
	ctx := context.Background()
	c, f, _ := newTestClient(t)
	f.handle = (&slurmFake{sbatch: "4242\n"}).handle
	job := sampleJob()
	job.Annotations = map[string]string{"interlink.eu/reverse-forwards": "redis:6379"}
	if _, err := c.Submit(ctx, job); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	ref := c.Ref(job.Namespace, job.UID, "4242")
	file := path.Join(ref.Dir, jobscript.AnnotationsFile)
	if ff, ok := f.file(file); !ok || ff.mode != 0o600 {
		t.Fatalf("%s: %+v; want it, 0600", jobscript.AnnotationsFile, ff)
	}
	got, err := c.Submitted(ctx, ref)
	if err != nil || !maps.Equal(got, job.Annotations) {
		t.Errorf("Submitted: %v, %v; want %v", got, err, job.Annotations)
	}

	none := sampleJob()
	none.UID = "0b8f5a3c-6a53-4bd5-8c41-3a2f7a1d9e11"
	if _, err := c.Submit(ctx, none); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if got, err := c.Submitted(ctx, c.Ref(none.Namespace, none.UID, "")); err != nil || got == nil || len(got) != 0 {
		t.Errorf("Submitted of a job made with no annotations: %v, %v; want an empty map: none is what it was made with", got, err)
	}

	for name, content := range map[string]string{
		"not JSON":  "{\"interlink.eu/x\": ",
		"not a map": "[1, 2]\n",
		"too long":  "{\"a\": \"" + strings.Repeat("x", maxAnnotationsFile) + "\"}\n",
	} {
		f.put(file, content)
		if got, err := c.Submitted(ctx, ref); err != nil || got != nil {
			t.Errorf("%s: Submitted: %v, %v; want nil, nil", name, got, err)
		}
	}
	if err := f.RemoveAll(ctx, file); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Submitted(ctx, ref); err != nil || got != nil {
		t.Errorf("a job submitted before them: Submitted: %v, %v; want nil, nil", got, err)
	}
}

// FuzzSubmitted: whatever a job of the site account writes in place of its
// annotations.json, Submitted gives back nil or the map the file holds,
// never an error that would hold the pod.
func FuzzSubmitted(f *testing.F) {
	for _, seed := range []string{`{"interlink.eu/x":"1"}`, "null", "{}", "[]", `{"a":1}`, "\x00", `{"a":"\u0000"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, site, _ := newTestClient(t)
		ref := c.Ref("lab", sampleUID, "5")
		site.put(path.Join(ref.Dir, jobscript.AnnotationsFile), string(data))
		got, err := c.Submitted(context.Background(), ref)
		if err != nil {
			t.Fatalf("Submitted: %v", err)
		}
		var want map[string]string
		if json.Unmarshal(data, &want) == nil && len(data) <= maxAnnotationsFile {
			if want == nil {
				want = map[string]string{}
			}
			if !maps.Equal(got, want) {
				t.Errorf("Submitted: %v; want %v", got, want)
			}
		} else if got != nil {
			t.Errorf("Submitted of a file that holds no annotations: %v; want nil", got)
		}
	})
}
