package slurm

import (
	"context"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/sbatch/sbatchtest"
)

// sbatchHandler answers sbatch --version, --help and --usage as the sbatch
// that listed l does.
func sbatchHandler(l sbatchtest.Listing) func(args []string) ([]byte, error) {
	return func(args []string) ([]byte, error) {
		switch strings.Join(args, " ") {
		case "sbatch --version":
			return []byte("slurm-wlm " + l.Version + "\n"), nil
		case "sbatch --help":
			return []byte(l.Help), nil
		case "sbatch --usage":
			return []byte(l.Usage), nil
		}
		return nil, exitErr(args, 1, "unexpected command")
	}
}

func TestLearnSbatch(t *testing.T) {
	ctx := context.Background()
	c, f, _ := newTestClient(t)
	f.handle = sbatchHandler(sbatchtest.ReadListing(t, "24.11.5"))
	tab, err := c.LearnSbatch(ctx)
	if err != nil || tab.Version != "24.11.5" || len(tab.Added) != 5 {
		t.Fatalf("got %v, %v; want 24.11.5's table", tab, err)
	}
	file := path.Join(testRoot, ".sbatch", "24.11.5.json")
	if ff, ok := f.file(file); !ok || ff.mode != 0o600 {
		t.Fatalf("%s: got %v; want kept with mode 0600", file, ff)
	}
	// the same client asks the version only
	if again, err := c.LearnSbatch(ctx); err != nil || again != tab {
		t.Errorf("again: got %v, %v; want the table in memory", again, err)
	}
	if n := f.count("sbatch"); n != 4 {
		t.Errorf("sbatch ran %d times; want 4 (version, help, usage, version)", n)
	}
	// a restart reads the file
	c2 := &Client{Site: f, DataRoot: testRoot, Logger: c.Logger}
	if tab2, err := c2.LearnSbatch(ctx); err != nil || !slices.Equal(tab2.Added, tab.Added) {
		t.Errorf("after a restart: got %v, %v", tab2, err)
	}
	if n := len(f.allCalls("sbatch")); n != 5 {
		t.Errorf("sbatch ran %d times; want 5: a restart asks the version only", n)
	}
	// a new version is learned anew, in its own file
	f.handle = sbatchHandler(sbatchtest.ReadListing(t, "22.05.8"))
	if tab3, err := c2.LearnSbatch(ctx); err != nil || tab3.Version != "22.05.8" || len(tab3.Added) != 0 {
		t.Errorf("after an upgrade: got %v, %v", tab3, err)
	}
	if _, ok := f.file(path.Join(testRoot, ".sbatch", "22.05.8.json")); !ok {
		t.Error("22.05.8's listing not kept")
	}
}

func TestLearnSbatchFallsBack(t *testing.T) {
	fx := sbatchHandler(sbatchtest.ReadListing(t, "22.05.8"))
	for _, tc := range []struct {
		name   string
		handle func([]string) ([]byte, error)
		want   string
	}{
		{"no sbatch", nil, "command not found"},
		{"not a version", func(args []string) ([]byte, error) { return []byte("slurm 22.05.8/../../x\n"), nil }, "not a Slurm version"},
		{"help fails", func(args []string) ([]byte, error) {
			if args[1] == "--help" {
				return nil, exitErr(args, 1, "sbatch: error: broken")
			}
			return fx(args)
		}, "sbatch --help"},
		{"help lists nothing", func(args []string) ([]byte, error) {
			if args[1] == "--version" {
				return fx(args)
			}
			return []byte("nothing here\n"), nil
		}, "no options found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, f, _ := newTestClient(t)
			f.handle = tc.handle
			tab, err := c.LearnSbatch(context.Background())
			if tab != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, %v; want the built-in table and an error with %q", tab, err, tc.want)
			}
			// the built-in table still checks flags
			if err := tab.ValidateFlag("--partition=gpu"); err != nil {
				t.Errorf("built-in table: %v", err)
			}
		})
	}
}

// A kept file that is not what sluice wrote is read again from the site.
func TestLearnSbatchIgnoresBadFile(t *testing.T) {
	for name, data := range map[string]string{
		"not json":      "{",
		"other version": `{"version":"24.11.5","help":"  --x=y\n","usage":""}`,
		"empty help":    `{"version":"22.05.8","help":"","usage":""}`,
	} {
		t.Run(name, func(t *testing.T) {
			c, f, log := newTestClient(t)
			f.handle = sbatchHandler(sbatchtest.ReadListing(t, "22.05.8"))
			f.put(path.Join(testRoot, ".sbatch", "22.05.8.json"), data)
			tab, err := c.LearnSbatch(context.Background())
			if err != nil || tab.Version != "22.05.8" || tab.Listed != 93 {
				t.Fatalf("got %v, %v", tab, err)
			}
			if log.seen("slurm: reading sbatch's options again") != 1 {
				t.Error("the bad file was not logged")
			}
			if tab.ValidateFlag("--x=y") == nil {
				t.Error("the bad file's option was taken")
			}
		})
	}
}
