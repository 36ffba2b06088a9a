//go:build rig

package slurm

import (
	"context"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/sbatch"
)

// sluice learns each rig site's sbatch from its own help and usage, keeps
// it under DataRoot, reads it back after a restart, and checks flags as
// that sbatch does: --tres-per-task, which 22.05 lacks, is refused on the
// first site in the site's name (and its sbatch refuses it too), and
// accepted on the second, Slurm 24.11 (whose sbatch takes it); --power,
// which 24.11's help lists and its parser dropped, the other way round.
func TestRigLearnSbatch(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeCharliecloud)
		tab, version := learnRigSbatch(t, e)
		// 24.11 added --tres-per-task and dropped --power (which its
		// help still lists)
		tres := []string{"sbatch " + version + " at the site has no option --tres-per-task", "unrecognized option"}
		power := []string{"", ""}
		if on.slurm != "22.05" {
			tres, power = power, []string{"sbatch " + version + " at the site has no option --power", "unrecognized option"}
		}
		for _, tc := range []struct {
			flag   string
			refuse string // what sluice says, "" to accept
			sbatch string // what sbatch's parser says of it, "" when it takes it
		}{
			{"--tres-per-task=cpu=1", tres[0], tres[1]},
			{"--power=level", power[0], power[1]},
			{"--hint=compute_bound", "", ""},
			{"--exclusive=user", "", ""},
			{"--hold=yes", "--hold takes no value", "doesn't allow an argument"},
			{"--foo=1", "sbatch " + version + " at the site has no option --foo", "unrecognized option"},
			// sbatch takes it; sluice keeps its own refusal
			{"--output=x", "set by sluice", ""},
		} {
			err := tab.ValidateFlag(tc.flag)
			switch {
			case tc.refuse == "" && err != nil:
				t.Errorf("%s: got %v; want it accepted", tc.flag, err)
			case tc.refuse != "" && (err == nil || !strings.Contains(err.Error(), tc.refuse)):
				t.Errorf("%s: got %v; want a refusal with %q", tc.flag, err, tc.refuse)
			}
			said := e.sbatchParse(t, tc.flag)
			if tc.sbatch != "" && !strings.Contains(said, tc.sbatch) {
				t.Errorf("sbatch %s: %s; want %q", tc.flag, said, tc.sbatch)
			}
			if tc.sbatch == "" && strings.Contains(said, "option") {
				t.Errorf("sbatch %s: %s; want its parser to take it", tc.flag, said)
			}
		}
		// what the site added is never refused where its parser takes
		// it; a bare name in the help of a release sluice has no rule
		// for may pass where sbatch wants a value: sbatch refuses that
		// job itself (on the rig's releases, sbatchAddedKinds leaves
		// none: TestRigSbatchKnowsTheFlagsSluiceAccepts)
		for _, name := range tab.Added {
			for _, flag := range []string{"--" + name, "--" + name + "=x"} {
				said := e.sbatchParse(t, flag)
				parsed := !containsAny(said, []string{"unrecognized option", "requires an argument", "doesn't allow an argument"})
				err := tab.ValidateFlag(flag)
				if parsed && err != nil {
					t.Errorf("%s: sluice refuses (%v) what sbatch's parser takes (%s)", flag, err, said)
				}
				if !parsed && err == nil {
					t.Logf("%s: sluice passes what sbatch refuses: %s", flag, said)
				}
			}
		}
	})
}

// learnRigSbatch learns the options of e's sbatch into a DataRoot of the
// test's own, checks the kept file and that a restart asks the version
// only, and returns the table and the version.
func learnRigSbatch(t *testing.T, e *rigEnv) (*sbatch.Options, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e.c.DataRoot = path.Join(e.c.DataRoot, "learn-"+newUID(t))
	t.Cleanup(func() { _ = e.site.RemoveAll(context.Background(), e.c.DataRoot) })
	out, err := e.site.Run(ctx, nil, "sbatch", "--version")
	if err != nil {
		t.Fatal(err)
	}
	_, version, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	tab, err := e.c.LearnSbatch(ctx)
	if err != nil {
		t.Fatalf("LearnSbatch: %v", err)
	}
	t.Logf("learned %s; beyond 22.05: %q", tab, tab.Added)
	if tab.Version != version || tab.Listed < 80 {
		t.Errorf("got %s; want sbatch %s with its options", tab, version)
	}
	fi, err := e.site.Stat(ctx, path.Join(e.c.DataRoot, sbatchDir, version+".json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kept listing: got %v, %v; want a file of mode 0600", fi, err)
	}
	e.site.reset()
	restarted := &Client{Site: e.site, DataRoot: e.c.DataRoot, Logger: e.c.Logger}
	again, err := restarted.LearnSbatch(ctx)
	if err != nil || again.Version != version || again.Listed != tab.Listed {
		t.Fatalf("after a restart: got %v, %v; want %s", again, err, tab)
	}
	if runs := e.site.reset(); runs["sbatch"] != 1 {
		t.Errorf("after a restart sbatch ran %d times; want 1 (--version)", runs["sbatch"])
	}
	return tab, version
}
