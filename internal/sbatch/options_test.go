package sbatch

import (
	"slices"
	"testing"

	"github.com/sluice-hpc/sluice/internal/sbatch/sbatchtest"
)

// --power, which 24.11's help still lists, is gone from its parser: the
// learned table of 24.11 refuses it in the site's name, the built-in table
// and those of earlier releases pass it, and a later release lacks it too.
func TestDroppedOptionByVersion(t *testing.T) {
	old := sbatchtest.ReadListing(t, "22.05.8")
	newer := sbatchtest.ReadListing(t, "24.11.5")
	later := newer
	later.Version = "25.05.1"
	between := old
	between.Version = "23.02.7"
	for _, tc := range []struct {
		name string
		tab  *Options
		want string // "" to accept
	}{
		{"built-in", nil, ""},
		{"22.05", table(t, old), ""},
		{"23.02", table(t, between), ""},
		{"24.11", table(t, newer), `sbatch flag "--power=level": sbatch 24.11.5 at the site has no option --power`},
		{"25.05", table(t, later), `sbatch flag "--power=level": sbatch 25.05.1 at the site has no option --power`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.tab.ValidateFlag("--power=level")
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("got %v; want it accepted", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("got %v; want %s", err, tc.want)
			}
			if tc.tab != nil && slices.Contains(tc.tab.Added, "power") {
				t.Errorf("added %q: a dropped option came back from the listing", tc.tab.Added)
			}
		})
	}
}

func TestReleaseBefore(t *testing.T) {
	for _, tc := range []struct {
		version, release string
		want             bool
	}{
		{"22.05.8", "24.11", true},
		{"24.05.3", "24.11", true},
		{"24.11", "24.11", false},
		{"24.11.5", "24.11", false},
		{"25.05.0", "24.11", false},
		{"23.11.0-0rc1", "24.11", true},
		// unreadable: taken as no earlier
		{"x.y", "24.11", false},
		{"24", "24.11", false},
		{"", "24.11", false},
	} {
		if got := releaseBefore(tc.version, tc.release); got != tc.want {
			t.Errorf("releaseBefore(%q, %q) = %v; want %v", tc.version, tc.release, got, tc.want)
		}
	}
}

// Names lists what the table lets through, sorted, without sluice's own
// options, and with what the site's sbatch added.
func TestNames(t *testing.T) {
	builtin := (*Options)(nil).Names()
	newer := table(t, sbatchtest.ReadListing(t, "24.11.5")).Names()
	for _, tc := range []struct {
		name  string
		names []string
		has   string
		lacks []string
	}{
		{"built-in", builtin, "partition", []string{"job-name", "output", "tres-per-task"}},
		{"24.11", newer, "tres-per-task", []string{"job-name", "power"}},
	} {
		if !slices.IsSorted(tc.names) || !slices.Contains(tc.names, tc.has) {
			t.Errorf("%s: got %q; want sorted, with %s", tc.name, tc.names, tc.has)
		}
		for _, name := range tc.lacks {
			if slices.Contains(tc.names, name) {
				t.Errorf("%s: got %s; want it left out", tc.name, name)
			}
		}
	}
	for _, name := range builtin {
		if ValidateFlag("--"+name) != nil && ValidateFlag("--"+name+"=x") != nil {
			t.Errorf("--%s listed, refused in both forms", name)
		}
	}
}
