package sbatch

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// flagSyntax is the only shape a flag takes once split (SplitFlags): one
// long option, with an optional value made of printable ASCII other than
// space. It is what each #SBATCH line the job gets from the pod holds.
var flagSyntax = regexp.MustCompile(`^--[a-z][a-z0-9-]*(=[!-~]+)?$`)

// reservedFlags are the sbatch options the job relies on, with the reason
// sluice keeps them: its name, its files, its script, and the output sluice
// reads from sbatch.
var reservedFlags = map[string]string{
	"array":     "one pod is one job, not an array",
	"chdir":     "the job runs in its job directory, where sluice keeps its files",
	"cluster":   "sluice submits to and polls the site's cluster only",
	"clusters":  "sluice submits to and polls the site's cluster only",
	"comment":   "the site sets the job's comment (Site.JobComment), which squeue shows every user of the site",
	"error":     "sluice reads the job's output from its job directory",
	"gid":       "the job runs as the site's user",
	"help":      "sluice reads sbatch's output",
	"input":     "the job's standard input is sluice's",
	"job-name":  "sluice names the job after the pod UID, to find it again",
	"jobid":     "Slurm numbers the job",
	"output":    "sluice reads the job's output from its job directory",
	"parsable":  "sluice reads sbatch's output",
	"quiet":     "sluice reads sbatch's output",
	"test-only": "sluice reads sbatch's output",
	"uid":       "the job runs as the site's user",
	"usage":     "sluice reads sbatch's output",
	"version":   "sluice reads sbatch's output",
	"wait":      "sluice does not wait for the job in sbatch",
	"wrap":      "the job's script is sluice's",
}

// ValidateFlag checks one extra sbatch flag as SplitFlags gives it. A valid
// flag is a single word "--name" or "--name=value" that sbatch reads as
// exactly that word on an #SBATCH line: no spaces, quotes, backslashes, '#'
// or control characters, which sbatch would split, unquote, unescape or cut
// at. The name is one of sbatch's options written in full (sbatch would take
// an abbreviation for whichever option it starts, and refuse an unknown one
// at every submission), with a value exactly when the option takes one.
// Flags that would change the job's name, files, script or sbatch's output
// are refused, with the reason. The options are those of sluice's built-in
// table (Options.ValidateFlag checks a site's).
func ValidateFlag(flag string) error { return (*Options)(nil).ValidateFlag(flag) }

// ValidateFlag checks one flag as the package's ValidateFlag does, against
// the options of t. sluice's own refusals come first, whatever t holds.
func (t *Options) ValidateFlag(flag string) error {
	if !flagSyntax.MatchString(flag) {
		return fmt.Errorf("sbatch flag %q: want one option, --name or --name=value, whose value is printable ASCII without spaces, quotes, backslashes or '#'", flag)
	}
	if strings.ContainsAny(flag, "'\"\\#") {
		return fmt.Errorf("sbatch flag %q: quotes, backslashes and '#' are not allowed in a value", flag)
	}
	name, _, hasValue := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
	if r := reservedFlag(name); r != "" {
		return fmt.Errorf("sbatch flag %q: --%s is set by sluice and cannot be changed: %s", flag, r, reservedFlags[r])
	}
	kind, known := t.option(name)
	switch {
	case !known:
		return fmt.Errorf("sbatch flag %q: %s --%s%s%s", flag, t.whose(), name, t.fullNames(name), t.unknownNote())
	case kind == argRequired && !hasValue:
		return fmt.Errorf("sbatch flag %q: --%s needs a value (--%s=value or --%s value)", flag, name, name, name)
	case kind == argNone && hasValue:
		return fmt.Errorf("sbatch flag %q: --%s takes no value", flag, name)
	}
	return nil
}

// jobNameOption is the option that names a job. A pod's job name is
// dropped rather than refused (PodFlags).
const jobNameOption = "job-name"

// isJobName tells whether flag, as SplitFlags gives it, names the job:
// --job-name=value or an abbreviation that sbatch reads as it, one that no
// other option of sbatch's starts with (--job=x, --j=x on Slurm 22.05).
func (t *Options) isJobName(flag string) bool {
	name, _, hasValue := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
	if !hasValue || !strings.HasPrefix(flag, "--") || name == "" || !strings.HasPrefix(jobNameOption, name) {
		return false
	}
	for o := range t.longNames() {
		if o != jobNameOption && strings.HasPrefix(o, name) {
			return false
		}
	}
	return true
}

// reservedFlag is the reserved option that name is or abbreviates, or "".
// When name abbreviates several, the first in alphabetical order.
func reservedFlag(name string) string {
	var found string
	for r := range reservedFlags {
		if strings.HasPrefix(r, name) && (found == "" || r < found) {
			found = r
		}
	}
	return found
}

// fullNames suggests the options that name abbreviates, if any.
func (t *Options) fullNames(name string) string {
	var full []string
	for o := range t.longNames() {
		if strings.HasPrefix(o, name) {
			full = append(full, "--"+o)
		}
	}
	if len(full) == 0 {
		return ""
	}
	slices.Sort(full)
	return " (write the option in full: " + strings.Join(full, ", ") + ")"
}
