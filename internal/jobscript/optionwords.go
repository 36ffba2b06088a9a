package jobscript

import (
	"fmt"
	"strings"

	"github.com/sluice-hpc/sluice/internal/sbatch"
)

// optionSource says where runtime options come from, which decides what
// they may be.
type optionSource int

const (
	optionsFromSite optionSource = iota // Site.SingularityDefaultOptions, Site.EnrootDefaultOptions
	optionsFromPod                      // slurm-job.vk.io/singularity-options, enroot-options
	mountsFromPod                       // slurm-job.vk.io/singularity-mounts, enroot-mounts: mounts only
)

// optionRule is what the option walker needs of one runtime option.
type optionRule struct {
	value   bool   // takes a value (the next word, or after '=')
	refused string // why sluice refuses it, "" when accepted
}

// optionGrammar is what walkOptions needs of a container runtime's
// options (apptainer exec/run, enroot start).
type optionGrammar struct {
	runtime string          // as errors name it: "apptainer", "enroot start"
	what    string          // what a word that is no option would be read as
	short   map[byte]string // one-letter options by their long names
	// rule gives the named option's rule, false when sluice does not
	// know it.
	rule func(name string) (optionRule, bool)
	// mount is the one option a mounts annotation (mountsFromPod) may
	// hold; mountsOnly is the refusal of any other, after the word.
	mount, mountsOnly string
	// bareMounts: under mountsFromPod a word that is no option is a
	// value of mount.
	bareMounts bool
}

// walkOptions reads option words as g describes them and gives them as
// words: each option known, not refused, with a value exactly when it
// takes one. An option without a value is given as --name; take checks
// the value of one that has one and gives its words. Options are read,
// checked and taken in order, so the first bad word is the one refused.
func (g optionGrammar) walkOptions(words []string, src optionSource, take func(name, value string) ([]string, error)) ([]string, error) {
	var out []string
	for i := 0; i < len(words); i++ {
		word := words[i]
		if g.bareMounts && src == mountsFromPod && !strings.HasPrefix(word, "-") {
			w, err := take(g.mount, word)
			if err != nil {
				return nil, err
			}
			out = append(out, w...)
			continue
		}
		name, value, hasValue, err := optionWord(word, g.short, g.runtime, g.what)
		if err != nil {
			return nil, err
		}
		opt, known := g.rule(name)
		switch {
		case !known:
			return nil, fmt.Errorf("%q: sluice does not know the %s option --%s", word, g.runtime, name)
		case opt.refused != "":
			return nil, fmt.Errorf("%q: --%s is refused: %s", word, name, opt.refused)
		case src == mountsFromPod && name != g.mount:
			return nil, fmt.Errorf("%q: %s", word, g.mountsOnly)
		case !opt.value && hasValue:
			return nil, fmt.Errorf("%q: --%s takes no value", word, name)
		case opt.value && !hasValue:
			if i+1 == len(words) || strings.HasPrefix(words[i+1], "-") {
				return nil, fmt.Errorf("%q: --%s needs a value", word, name)
			}
			i++
			value = words[i]
		}
		if !opt.value {
			out = append(out, "--"+name)
			continue
		}
		w, err := take(name, value)
		if err != nil {
			return nil, err
		}
		out = append(out, w...)
	}
	return out, nil
}

// optionWords splits runtime options, each element one or more shell
// words, into words.
func optionWords(opts []string) ([]string, error) {
	var words []string
	for _, o := range opts {
		w, err := sbatch.SplitWords(o)
		if err != nil {
			return nil, err
		}
		words = append(words, w...)
	}
	return words, nil
}

// optionWord reads one option word of a runtime whose one-letter options
// are short: --name, --name=value, -x, -xvalue. A word that is no option
// would be read as what follows the options (what).
func optionWord(word string, short map[byte]string, runtime, what string) (name, value string, hasValue bool, err error) {
	switch {
	case strings.HasPrefix(word, "--"):
		name, value, hasValue = strings.Cut(word[2:], "=")
		return name, value, hasValue, nil
	case len(word) >= 2 && word[0] == '-':
		long, ok := short[word[1]]
		if !ok {
			return "", "", false, fmt.Errorf("%q: sluice does not know the %s option -%c", word, runtime, word[1])
		}
		if len(word) > 2 {
			return long, strings.TrimPrefix(word[2:], "="), true, nil
		}
		return long, "", false, nil
	}
	return "", "", false, fmt.Errorf("%q is not an %s option (a value goes right after its option); it would be read as %s", word, runtime, what)
}
