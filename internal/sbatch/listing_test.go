package sbatch

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/sbatch/sbatchtest"
)

// table makes the table of l as slurm.Client.LearnSbatch does.
func table(t testing.TB, l sbatchtest.Listing) *Options {
	t.Helper()
	tab, err := FromListing(l.Version, []byte(l.Help), []byte(l.Usage))
	if err != nil {
		t.Fatalf("parse sbatch %s: %v", l.Version, err)
	}
	return tab
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
			tab := table(t, sbatchtest.ReadListing(t, tc.version))
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
	old := table(t, sbatchtest.ReadListing(t, "22.05.8"))
	newer := table(t, sbatchtest.ReadListing(t, "24.11.5"))
	const annotation = "--tres-per-task=gres/gpu:1 -p gpu"
	for _, tc := range []struct {
		name string
		tab  *Options
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
		{"too long", strings.Repeat("x", MaxListing+1), "", "more than"},
		{"usage too long", "  --a=x\n", strings.Repeat("[--a=x]", MaxListing), "more than"},
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

// The site's help and usage never give a name an #SBATCH line could not
// hold as one word, a letter that stands for an unknown option, nor a
// table that lets a reserved option through.
func FuzzParseSbatchListing(f *testing.F) {
	for _, v := range []string{"22.05.8", "24.11.5"} {
		fx := sbatchtest.ReadListing(f, v)
		f.Add(fx.Help, fx.Usage, "")
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
