//go:build rig

package slurm

import (
	"bytes"
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/sbatch"
)

// The refusals of FromPod and ValidateFlag match the rig's real sbatch:
// each script sluice would have sent for an input it refuses is refused by
// sbatch too, in words sbatchRefused takes for a refusal (so that a job
// that got past would fail its pod rather than be submitted again).
func TestRigSbatchRefusesWhatSluiceRefuses(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		job := e.shJob(t, nil, [][2]string{{"main", "echo ARGUMENT"}})
		job.PreExec = "echo PREEXEC"
		job.Flags = []string{"--partition=debug"} // the rig's partition
		dir := path.Join(e.c.DataRoot, "rig", job.UID)
		script, err := jobscript.Script(job, jobscript.ScriptOptions{JobDir: dir, Runtime: e.c.Runtime})
		if err != nil {
			t.Fatalf("Script: %v", err)
		}
		// what sluice would have sent, had it not refused these inputs
		for _, tc := range []struct {
			name     string
			old, new string
			refused  error  // what sluice says
			sbatch   string // what sbatch says
		}{
			{"CR LF in an argument", "echo ARGUMENT", "echo a\r\nb", scriptRefusal(job, dir, "ARGUMENT", "a\r\nb"), "DOS line breaks"},
			{"NUL in an argument", "echo ARGUMENT", "echo a\x00b", scriptRefusal(job, dir, "ARGUMENT", "a\x00b"), "NULL character"},
			{"CR LF in the pre-exec", "echo PREEXEC", "module load x\r\necho ok", scriptRefusal(job, dir, "echo PREEXEC", "module load x\r\necho ok"), "DOS line breaks"},
			{"unknown option", "--partition=debug", "--foo=1", sbatch.ValidateFlag("--foo=1"), "unrecognized option '--foo=1'"},
			{"option without its value", "--partition=debug", "--qos", sbatch.ValidateFlag("--qos"), "option '--qos' requires an argument"},
			{"value of an option that takes none", "--partition=debug", "--contiguous=yes", sbatch.ValidateFlag("--contiguous=yes"), "option '--contiguous' doesn't allow an argument"},
			{"ambiguous abbreviation", "--partition=debug", "--mail=x", sbatch.ValidateFlag("--mail=x"), "is ambiguous"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if tc.refused == nil {
					t.Fatalf("sluice accepts %q", tc.new)
				}
				bad := bytes.Replace(script, []byte(tc.old), []byte(tc.new), 1)
				if bytes.Equal(bad, script) {
					t.Fatalf("%q is not in the script", tc.old)
				}
				rerr := e.sbatchTestOnly(t, bad)
				if rerr == nil {
					t.Fatalf("the rig's sbatch accepted the script sluice refuses (%v)", tc.refused)
				}
				if !strings.Contains(rerr.Message, tc.sbatch) {
					t.Errorf("sbatch: %s; want it to say %q", rerr.Message, tc.sbatch)
				}
				t.Logf("sluice: %v; sbatch: %s", tc.refused, rerr.Message)
			})
		}

		// the script itself, and one with a lone CR, which sluice keeps, are taken
		if rerr := e.sbatchTestOnly(t, script); rerr != nil {
			t.Fatalf("sbatch refused sluice's script: %s", rerr.Message)
		}
		if rerr := e.sbatchTestOnly(t, bytes.Replace(script, []byte("echo ARGUMENT"), []byte("echo a\rb"), 1)); rerr != nil {
			t.Errorf("sbatch refused a lone CR that sluice keeps: %s", rerr.Message)
		}
	})
}

// Every option the table learned from the rig's sbatch (LearnSbatch: the
// built-in one and what the site lists) lets through is one the rig's
// sbatch knows, with or without a value as it wants, and ValidateFlag
// refuses only the ways of writing an option that sbatch's parser refuses
// (or that sluice reserves). Nothing is submitted: the script is empty.
func TestRigSbatchKnowsTheFlagsSluiceAccepts(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		tab, _ := learnRigSbatch(t, e)
		parserRefusal := []string{"unrecognized option", "requires an argument", "doesn't allow an argument", "is ambiguous"}
		for _, name := range tab.Names() {
			for _, flag := range []string{"--" + name, "--" + name + "=x"} {
				err := tab.ValidateFlag(flag)
				stderr := e.sbatchParse(t, flag)
				parsed := !containsAny(strings.ToLower(stderr), parserRefusal)
				switch {
				case err == nil && !parsed:
					t.Errorf("ValidateFlag accepts %s; sbatch: %s", flag, stderr)
				case err != nil && parsed:
					t.Errorf("ValidateFlag refuses %s (%v); sbatch's parser takes it (%s)", flag, err, stderr)
				}
			}
		}
	})
}

// sbatchTestOnly runs sbatch --test-only on script, given on its standard
// input (nothing is submitted), and returns its refusal, or nil when it
// took the script.
func (e *rigEnv) sbatchTestOnly(t *testing.T, script []byte) *RefusedError {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := e.site.Run(ctx, bytes.NewReader(script), "sbatch", "--test-only")
	if err == nil {
		return nil
	}
	rerr, ok := sbatchRefused(err)
	if !ok {
		t.Fatalf("sbatch failed in a way sluice would retry: %v", err)
	}
	return rerr
}

// sbatchParse runs sbatch with flag on its command line (the parser of
// #SBATCH lines too) and an empty script: sbatch reads its options and
// stops at the script, before it asks the controller anything. It
// returns what sbatch said.
func (e *rigEnv) sbatchParse(t *testing.T, flag string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := e.site.Run(ctx, strings.NewReader(""), "sbatch", flag)
	code, msg := exitCode(err)
	if code < 0 {
		t.Fatalf("sbatch %s: got %v; want it to stop at the empty script", flag, err)
	}
	return msg
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// A value sbatch refuses reaches sbatch (sluice does not check values) and
// comes back as a *RefusedError, in sbatch's words: the pod fails instead
// of being submitted again.
func TestRigSubmitRefused(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		job := e.shJob(t, nil, [][2]string{{"main", "echo never"}})
		job.Flags = []string{"--time=soon"}
		if err := sbatch.ValidateFlag(job.Flags[0]); err != nil {
			t.Fatalf("ValidateFlag: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		t.Cleanup(func() {
			if err := e.c.Remove(context.Background(), e.c.Ref(job.Namespace, job.UID, "")); err != nil {
				t.Errorf("Remove: %v", err)
			}
		})
		id, err := e.c.Submit(ctx, job)
		var rerr *RefusedError
		if !errors.As(err, &rerr) || rerr.Message != "Invalid --time specification" {
			t.Fatalf("Submit = %q, %v; want a *RefusedError with sbatch's message", id, err)
		}
	})
}

// scriptRefusal is what Script says of job with old replaced by new in its
// containers' command lines and its pre-exec snippet.
func scriptRefusal(job *jobscript.Job, dir, old, new string) error {
	j := *job
	j.PreExec = strings.ReplaceAll(j.PreExec, old, new)
	j.Containers = slices.Clone(j.Containers)
	for i := range j.Containers {
		c := &j.Containers[i]
		c.Command, c.Args = slices.Clone(c.Command), slices.Clone(c.Args)
		for _, words := range [][]string{c.Command, c.Args} {
			for k := range words {
				words[k] = strings.ReplaceAll(words[k], old, new)
			}
		}
	}
	_, err := jobscript.Script(&j, jobscript.ScriptOptions{JobDir: dir, Runtime: jobscript.RuntimeCharliecloud})
	return err
}
