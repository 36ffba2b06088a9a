package sbatch

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// builtinVersion is the Slurm release whose sbatch the built-in table
// (builtin.go) describes.
const builtinVersion = "22.05"

// sbatchDropped are options of the built-in table that a later sbatch's
// parser no longer takes, by the release seen without it. That release's
// help may list them still (24.11's lists "--power=flags" and its usage
// "[--power=flags]", yet its parser answers "unrecognized option
// '--power'"), so the listing alone cannot take them out of a learned
// table. A release between 22.05 and the one named here that lacks an
// option passes it to sbatch, which refuses the job in its own words.
var sbatchDropped = map[string]string{
	"power": "24.11",
}

// sbatchAddedKinds are the value rules of options newer than the built-in
// table where a release's listings say less than its parser, as the
// built-in table's own rules correct 22.05's: 24.11's help lists
// "--container-id" bare, and its parser answers "option '--container-id'
// requires an argument".
var sbatchAddedKinds = map[string]argKind{
	"container-id": argRequired,
}

// droppedBy is the set of sbatchDropped options that the sbatch of version
// lacks.
func droppedBy(version string) map[string]bool {
	dropped := map[string]bool{}
	for name, since := range sbatchDropped {
		if !releaseBefore(version, since) {
			dropped[name] = true
		}
	}
	return dropped
}

// releaseBefore reports whether the Slurm release of version ("23.02.7")
// comes before release ("24.11"). A version it cannot read is taken as no
// earlier: what it lacks, it is taken to lack.
func releaseBefore(version, release string) bool {
	vMajor, vMinor, ok := majorMinor(version)
	rMajor, rMinor, rok := majorMinor(release)
	if !ok || !rok {
		return false
	}
	return vMajor < rMajor || vMajor == rMajor && vMinor < rMinor
}

// majorMinor reads the year and month of a Slurm version: "24.11.5" is 24,
// 11.
func majorMinor(version string) (major, minor int, ok bool) {
	y, rest, _ := strings.Cut(version, ".")
	m, _, _ := strings.Cut(rest, ".")
	major, err := strconv.Atoi(y)
	if err != nil {
		return 0, 0, false
	}
	minor, err = strconv.Atoi(m)
	if err != nil {
		return 0, 0, false
	}
	return major, minor, true
}

// Options is what one site's sbatch accepts: its long options, whether
// each takes a value, and its one-letter options. It holds everything sluice
// knows that depends on the Slurm version, so that the flags of a pod are
// checked against the sbatch that will read them.
//
// A nil *Options is sluice's built-in table of Slurm 22.05. A learned
// one (FromListing, from slurm.Client.LearnSbatch) is the built-in table plus what the site's own `sbatch
// --help` and `sbatch --usage` list: those lists leave out options sbatch
// accepts (22.05 lists neither --hint nor --prefer), so the built-in table
// stays the floor, and its value rules, checked against sbatch's parser,
// win over the lists' looser ones. Nothing here loosens sluice's own
// refusals (reservedFlags): they are checked first, whatever sbatch accepts.
type Options struct {
	// Version is the site's sbatch version, as `sbatch --version` gives it
	// ("22.05.8").
	Version string
	// Listed is how many long options the site's help and usage listed.
	Listed int
	// Added are the options the site listed that the built-in table lacks,
	// sorted.
	Added []string

	long  map[string]argKind
	short map[byte]string
}

// option reports whether name is a long option of sbatch and whether it
// takes a value.
func (t *Options) option(name string) (argKind, bool) {
	if t == nil {
		k, ok := sbatchOptions[name]
		return k, ok
	}
	k, ok := t.long[name]
	return k, ok
}

// shortOption is the long option a one-letter option stands for.
func (t *Options) shortOption(c byte) (string, bool) {
	if t == nil {
		l, ok := sbatchShortOptions[c]
		return l, ok
	}
	l, ok := t.short[c]
	return l, ok
}

// longNames iterates over the long options.
func (t *Options) longNames() map[string]argKind {
	if t == nil {
		return sbatchOptions
	}
	return t.long
}

// whose names the table in refusals: the site's sbatch when it was
// learned, sluice's built-in table when it was not, so that a refusal says
// whose word it is.
func (t *Options) whose() string {
	if t == nil {
		return "sbatch has no option"
	}
	return fmt.Sprintf("sbatch %s at the site has no option", t.Version)
}

// unknownNote follows a refusal by the built-in table: the site's own
// options were not learned, so the refusal may be out of date.
func (t *Options) unknownNote() string {
	if t != nil {
		return ""
	}
	return " (by sluice's built-in table of Slurm " + builtinVersion + ": the site's own sbatch options were not learned)"
}

// String describes the table for logs and doctor.
func (t *Options) String() string {
	if t == nil {
		return fmt.Sprintf("built-in table of Slurm %s (%d options)", builtinVersion, len(sbatchOptions))
	}
	return fmt.Sprintf("sbatch %s: %d options listed, %d beyond Slurm %s", t.Version, t.Listed, len(t.Added), builtinVersion)
}

// newSbatchOptions makes the table of a site's sbatch from what its help
// and usage listed: the built-in table, plus the listed options it lacks,
// plus the listed one-letter options (which stand for whatever the site
// says: sluice writes the long name, so sbatch reads what was checked).
func newSbatchOptions(version string, l listing) *Options {
	t := &Options{Version: version, Listed: len(l.long), long: maps.Clone(sbatchOptions), short: maps.Clone(sbatchShortOptions)}
	dropped := droppedBy(version)
	for name := range dropped {
		delete(t.long, name)
	}
	for c, name := range t.short {
		if dropped[name] {
			delete(t.short, c)
		}
	}
	for name, kind := range l.long {
		if _, ok := t.long[name]; !ok && !dropped[name] {
			if k, ok := sbatchAddedKinds[name]; ok {
				kind = k
			}
			t.long[name] = kind
			t.Added = append(t.Added, name)
		}
	}
	for c, name := range l.short {
		if _, ok := t.long[name]; ok {
			t.short[c] = name
		}
	}
	slices.Sort(t.Added)
	return t
}

// FromListing makes the table of the sbatch of version from its help and
// usage (`sbatch --help`, `sbatch --usage`), each at most MaxListing bytes:
// read as untrusted input (listing.go), added to the built-in table.
func FromListing(version string, help, usage []byte) (*Options, error) {
	l, err := parseSbatchListing(help, usage)
	if err != nil {
		return nil, err
	}
	return newSbatchOptions(version, l), nil
}

// Names are the long options t lets through, sorted: every option of its
// sbatch but those sluice sets itself (ValidateFlag refuses them).
func (t *Options) Names() []string {
	var names []string
	for name := range t.longNames() {
		if reservedFlag(name) == "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
