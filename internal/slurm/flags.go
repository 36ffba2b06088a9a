package slurm

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// flagSyntax is the only shape an extra sbatch flag may take: one long option,
// with an optional value made of printable ASCII other than space. Short
// options are refused: "-J x" needs two words, and "-Jx" hides the option's
// name from the checks below.
var flagSyntax = regexp.MustCompile(`^--[a-z][a-z0-9-]*(=[!-~]+)?$`)

// reservedFlags are the sbatch options the job relies on: its name, its
// files, its script, and the output sluice reads from sbatch.
var reservedFlags = []string{
	"array", "chdir", "cluster", "clusters", "comment", "error", "gid",
	"help", "input", "job-name", "jobid", "output", "parsable", "quiet",
	"test-only", "uid", "usage", "version", "wait", "wrap",
}

// ParseFlags reads the value of AnnotationFlags: one flag per line, blank
// lines and surrounding spaces ignored. Every flag is checked by
// ValidateFlag; the error names the line.
func ParseFlags(annotation string) ([]string, error) {
	var flags []string
	for i, line := range strings.Split(annotation, "\n") {
		flag := strings.Trim(line, " \t\r")
		if flag == "" {
			continue
		}
		if err := ValidateFlag(flag); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		flags = append(flags, flag)
	}
	return flags, nil
}

// ValidateFlag checks one extra sbatch flag. A valid flag is a single word
// "--name" or "--name=value" that sbatch reads as exactly that word on an
// #SBATCH line: no spaces, quotes, backslashes, '#' or control characters,
// which sbatch would split, unquote, unescape or cut at. The name is one of
// sbatch's options written in full (sbatch would take an abbreviation for
// whichever option it starts, and refuse an unknown one at every
// submission), with a value exactly when the option takes one. Flags that
// would change the job's name, files, script or sbatch's output are refused.
func ValidateFlag(flag string) error {
	if !flagSyntax.MatchString(flag) {
		return fmt.Errorf("sbatch flag %q: want one long option, --name or --name=value, without spaces, quotes, backslashes or '#'", flag)
	}
	if strings.ContainsAny(flag, "'\"\\#") {
		return fmt.Errorf("sbatch flag %q: quotes, backslashes and '#' are not allowed", flag)
	}
	name, _, hasValue := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
	if r := reservedFlag(name); r != "" {
		return fmt.Errorf("sbatch flag %q: --%s is set by sluice and cannot be changed", flag, r)
	}
	kind, known := sbatchOptions[name]
	switch {
	case !known:
		return fmt.Errorf("sbatch flag %q: sbatch has no option --%s%s", flag, name, fullNames(name))
	case kind == argRequired && !hasValue:
		return fmt.Errorf("sbatch flag %q: --%s needs a value (--%s=value)", flag, name, name)
	case kind == argNone && hasValue:
		return fmt.Errorf("sbatch flag %q: --%s takes no value", flag, name)
	}
	return nil
}

// reservedFlag is the reserved option that name is or abbreviates, or "".
func reservedFlag(name string) string {
	for _, r := range reservedFlags {
		if strings.HasPrefix(r, name) {
			return r
		}
	}
	return ""
}

// fullNames suggests the options that name abbreviates, if any.
func fullNames(name string) string {
	var full []string
	for o := range sbatchOptions {
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
