package slurm

import (
	"context"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
)

// sbatchFixture is a site's sbatch as testdata/sbatch holds it.
type sbatchFixture struct {
	version, help, usage string
}

func readSbatchFixture(t testing.TB, version string) sbatchFixture {
	t.Helper()
	help, err := os.ReadFile(path.Join("testdata", "sbatch", version+".help"))
	if err != nil {
		t.Fatal(err)
	}
	usage, err := os.ReadFile(path.Join("testdata", "sbatch", version+".usage"))
	if err != nil {
		t.Fatal(err)
	}
	return sbatchFixture{version: version, help: string(help), usage: string(usage)}
}

// table parses the fixture as LearnSbatch does.
func (f sbatchFixture) table(t testing.TB) *SbatchOptions {
	t.Helper()
	l, err := parseSbatchListing([]byte(f.help), []byte(f.usage))
	if err != nil {
		t.Fatalf("parse sbatch %s: %v", f.version, err)
	}
	return newSbatchOptions(f.version, l)
}

// handle answers sbatch --version, --help and --usage as the fixture's
// sbatch does.
func (f sbatchFixture) handle(args []string) ([]byte, error) {
	switch strings.Join(args, " ") {
	case "sbatch --version":
		return []byte("slurm-wlm " + f.version + "\n"), nil
	case "sbatch --help":
		return []byte(f.help), nil
	case "sbatch --usage":
		return []byte(f.usage), nil
	}
	return nil, exitErr(args, 1, "unexpected command")
}

func TestParseSbatchListing(t *testing.T) {
	for _, tc := range []struct {
		version string
		listed  int
		added   []string
		kinds   map[string]argKind // of the table
		short   map[byte]string
	}{
		{
			version: "22.05.8", listed: 93,
			kinds: map[string]argKind{
				"partition": argRequired, "hold": argNone, "nice": argOptional,
				// the help lists these bare or optional; sbatch's parser,
				// and so the built-in table, says otherwise
				"container": argRequired, "wrap": argRequired, "get-user-env": argOptional,
				// not listed by 22.05's help nor usage, and accepted
				"hint": argRequired, "prefer": argRequired,
			},
			short: map[byte]string{'B': "extra-node-info", 'p': "partition", 'J': "job-name"},
		},
		{
			version: "24.11.5", listed: 98,
			added: []string{"container-id", "oom-kill-step", "resv-ports", "tres-bind", "tres-per-task"},
			kinds: map[string]argKind{
				"tres-per-task": argRequired, "tres-bind": argRequired, "oom-kill-step": argOptional,
				// listed bare by the help alone: a value may follow '='
				"resv-ports": argOptional,
				// listed bare too, but 24.11's parser requires a value
				"container-id": argRequired,
			},
			short: map[byte]string{'B': "extra-node-info", 'G': "gpus"},
		},
	} {
		t.Run(tc.version, func(t *testing.T) {
			tab := readSbatchFixture(t, tc.version).table(t)
			if tab.Version != tc.version || tab.Listed != tc.listed || !slices.Equal(tab.Added, tc.added) {
				t.Errorf("got version %q, %d listed, added %q; want %q, %d, %q", tab.Version, tab.Listed, tab.Added, tc.version, tc.listed, tc.added)
			}
			for name, want := range tc.kinds {
				if got, ok := tab.option(name); !ok || got != want {
					t.Errorf("--%s: got %v (known %v); want %v", name, got, ok, want)
				}
			}
			for c, want := range tc.short {
				if got, _ := tab.shortOption(c); got != want {
					t.Errorf("-%c: got --%s; want --%s", c, got, want)
				}
			}
			// "--mem >= --mem-per-cpu if --mem is specified." wraps a
			// description: it lists nothing
			if _, ok := tab.option("r"); ok {
				t.Error("usage's -r became an option")
			}
		})
	}
}

// An option of 24.11 that 22.05 lacks is refused on 22.05 in the words of
// the site's sbatch, by the built-in table in its own, and accepted on 24.11.
func TestTresPerTaskByVersion(t *testing.T) {
	old := readSbatchFixture(t, "22.05.8").table(t)
	newer := readSbatchFixture(t, "24.11.5").table(t)
	const annotation = "--tres-per-task=gres/gpu:1 -p gpu"
	for _, tc := range []struct {
		name string
		tab  *SbatchOptions
		want string // "" to accept
	}{
		{"22.05", old, `sbatch flag "--tres-per-task=gres/gpu:1": sbatch 22.05.8 at the site has no option --tres-per-task`},
		{"built-in", nil, `sbatch flag "--tres-per-task=gres/gpu:1": sbatch has no option --tres-per-task (by sluice's built-in table of Slurm 22.05: the site's own sbatch options were not learned)`},
		{"24.11", newer, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flags, err := tc.tab.SplitFlags(annotation)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v; want it accepted", err)
			case tc.want == "":
				if want := []string{"--tres-per-task=gres/gpu:1", "--partition=gpu"}; !slices.Equal(flags, want) {
					t.Errorf("got %q; want %q", flags, want)
				}
			case err == nil || err.Error() != tc.want:
				t.Errorf("got %v; want %s", err, tc.want)
			}
		})
	}
	// the space form joins the value when the site says one is required
	if flags, err := newer.SplitFlags("--tres-per-task gres/gpu:1"); err != nil || !slices.Equal(flags, []string{"--tres-per-task=gres/gpu:1"}) {
		t.Errorf("24.11, space form: got %q, %v", flags, err)
	}
	// a pod's flags reach the job through the site's table
	pod := simplePod("busybox")
	pod.Annotations = map[string]string{AnnotationFlags: annotation}
	for _, tc := range []struct {
		tab *SbatchOptions
		ok  bool
	}{{old, false}, {newer, true}} {
		_, err := FromPod(context.Background(), pod, nil, PodOptions{Runtime: RuntimeApptainer, Site: SiteOptions{Sbatch: tc.tab}})
		if (err == nil) != tc.ok {
			t.Errorf("FromPod on sbatch %s: got %v; want accepted %v", tc.tab.Version, err, tc.ok)
		}
	}
}

// The site's listing never loosens sluice's own refusals: a listing that
// names every reserved option, in every form, and maps letters onto them,
// leaves each refused for sluice's reason.
func TestSbatchListingKeepsPolicy(t *testing.T) {
	var help, usage strings.Builder
	letters := "XYZjklmr"
	i := 0
	for name := range reservedFlags {
		fmt.Fprintf(&help, "      --%s[=x]    hostile\n", name)
		fmt.Fprintf(&usage, "[--%s] ", name)
		if i < len(letters) {
			fmt.Fprintf(&help, "  -%c, --%s     hostile\n", letters[i], name)
			i++
		}
	}
	l, err := parseSbatchListing([]byte(help.String()), []byte(usage.String()))
	if err != nil {
		t.Fatal(err)
	}
	tab := newSbatchOptions("99.99.0", l)
	for name, why := range reservedFlags {
		for _, flag := range []string{"--" + name, "--" + name + "=x"} {
			err := tab.ValidateFlag(flag)
			if err == nil || !strings.Contains(err.Error(), "is set by sluice") {
				t.Errorf("%s: got %v; want refused by sluice: %s", flag, err, why)
			}
		}
	}
	for _, c := range letters {
		if _, err := tab.SplitFlags(fmt.Sprintf("-%c x", c)); err == nil {
			t.Errorf("-%c x: accepted; want refused", c)
		}
	}
}

func TestParseSbatchListingRefuses(t *testing.T) {
	many := strings.Builder{}
	for i := range maxSbatchOptions + 1 {
		fmt.Fprintf(&many, "  --opt%d=x  an option\n", i)
	}
	for _, tc := range []struct {
		name, help, usage, want string
	}{
		{"empty", "", "", "no options found"},
		{"prose", "Usage: sbatch [OPTIONS]\nsee the manual\n                              --deeply-indented=x wraps\n", "", "no options found"},
		{"too long", strings.Repeat("x", maxSbatchListing+1), "", "more than"},
		{"usage too long", "  --a=x\n", strings.Repeat("[--a=x]", maxSbatchListing), "more than"},
		{"too many", many.String(), "", "more than 1000 options"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseSbatchListing([]byte(tc.help), []byte(tc.usage))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v; want an error with %q", err, tc.want)
			}
		})
	}
	// a name that is not one #SBATCH line could hold is not taken
	l, err := parseSbatchListing([]byte("  --ok=x\n  --Bad=x\n  --9x=x\n  --a_b=x\n  --"+strings.Repeat("a", 64)+"=x\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.long) != 1 || l.long["ok"] != argRequired {
		t.Errorf("got %v; want ok only", l.long)
	}
}

func TestLearnSbatch(t *testing.T) {
	ctx := context.Background()
	c, f, _ := newTestClient(t)
	fx := readSbatchFixture(t, "24.11.5")
	f.handle = fx.handle
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
	f.handle = readSbatchFixture(t, "22.05.8").handle
	if tab3, err := c2.LearnSbatch(ctx); err != nil || tab3.Version != "22.05.8" || len(tab3.Added) != 0 {
		t.Errorf("after an upgrade: got %v, %v", tab3, err)
	}
	if _, ok := f.file(path.Join(testRoot, ".sbatch", "22.05.8.json")); !ok {
		t.Error("22.05.8's listing not kept")
	}
}

func TestLearnSbatchFallsBack(t *testing.T) {
	fx := readSbatchFixture(t, "22.05.8")
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
			return fx.handle(args)
		}, "sbatch --help"},
		{"help lists nothing", func(args []string) ([]byte, error) {
			if args[1] == "--version" {
				return fx.handle(args)
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
			f.handle = readSbatchFixture(t, "22.05.8").handle
			f.put(path.Join(testRoot, ".sbatch", "22.05.8.json"), data)
			tab, err := c.LearnSbatch(context.Background())
			if err != nil || tab.Version != "22.05.8" || tab.Listed != 93 {
				t.Fatalf("got %v, %v", tab, err)
			}
			if log.seen("slurm: reading sbatch's options again") != 1 {
				t.Error("the bad file was not logged")
			}
			if _, ok := tab.option("x"); ok {
				t.Error("the bad file's option was taken")
			}
		})
	}
}

// The site's help and usage never give a name an #SBATCH line could not
// hold as one word, a letter that stands for an unknown option, nor a
// table that lets a reserved option through.
func FuzzParseSbatchListing(f *testing.F) {
	for _, v := range []string{"22.05.8", "24.11.5"} {
		fx := readSbatchFixture(f, v)
		f.Add(fx.help, fx.usage, "")
	}
	f.Add("  -o, --output[=x]  hostile\n      --job-name  hostile\n", "[--chdir=dir] [--wrap]", "-o x --job-name")
	f.Fuzz(func(t *testing.T, help, usage, annotation string) {
		l, err := parseSbatchListing([]byte(help), []byte(usage))
		if err != nil {
			return
		}
		if len(l.long) > maxSbatchOptions {
			t.Fatalf("%d options", len(l.long))
		}
		for name := range l.long {
			if !flagSyntax.MatchString("--"+name) || len(name) > 63 {
				t.Fatalf("learned --%q", name)
			}
		}
		tab := newSbatchOptions("1.0", l)
		for c, name := range tab.short {
			if _, ok := tab.long[name]; !ok {
				t.Fatalf("-%c stands for --%s, which the table lacks", c, name)
			}
		}
		for name := range reservedFlags {
			if tab.ValidateFlag("--"+name) == nil || tab.ValidateFlag("--"+name+"=x") == nil {
				t.Fatalf("--%s accepted", name)
			}
		}
		flags, err := tab.SplitFlags(annotation)
		if err != nil {
			return
		}
		for _, flag := range flags {
			name, _, _ := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
			if reservedFlag(name) != "" || !flagSyntax.MatchString(flag) {
				t.Fatalf("SplitFlags(%q) gave %q", annotation, flag)
			}
		}
	})
}
