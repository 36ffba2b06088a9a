package sbatch

import (
	"errors"
	"fmt"
	"strings"
)

// SplitFlags reads the value of the slurm-job.vk.io/flags annotation as interLink's Slurm plugin
// does, and gives each option in the one form sluice emits, "--name" or
// "--name=value", checked by ValidateFlag; the job gets one #SBATCH line per
// option.
//
// Options are separated by spaces, tabs or line breaks. A long option takes
// its value as --name=value or as the next word (--partition gpu), when
// sbatch says it requires one. A one-letter option (-p gpu, -t 10, -N 2, or
// attached: -pgpu) stands for its long option (sbatchShortOptions), whose
// rules apply: -o is --output, reserved like it. Quotes (' or ") and
// backslashes group and escape as a shell does, so that "-C 'a&b'" or
// --constraint="a|b" read as written on a command line; the value they give
// must still be one word of printable ASCII without spaces, quotes,
// backslashes or '#'. NUL and CR are refused, and so is a word that is
// neither an option nor the value of the one before it. The options are
// those of sluice's built-in table (Options.SplitFlags reads a
// site's).
func SplitFlags(annotation string) ([]string, error) {
	return (*Options)(nil).SplitFlags(annotation)
}

// SplitFlags reads annotation as the package's SplitFlags does, with the
// options of t.
func (t *Options) SplitFlags(annotation string) ([]string, error) {
	var flags []string
	err := t.eachFlag(annotation, func(w flagWord) error {
		if err := t.validate(w); err != nil {
			return err
		}
		flags = append(flags, w.flag)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return flags, nil
}

// PodFlags reads a pod's flags annotation as SplitFlags does, except that a
// job name (--job-name=x, -J x, -Jx, or an abbreviation sbatch takes) is
// left out and returned, as written, in dropped instead of refused:
// interLink's tutorials name their jobs so, sluice names every job after
// its pod's UID, and a name the job cannot have changes nothing else about
// it. Every other option sluice sets itself is refused, as by SplitFlags.
func (t *Options) PodFlags(annotation string) (flags, dropped []string, err error) {
	err = t.eachFlag(annotation, func(w flagWord) error {
		if t.isJobName(w.flag) {
			dropped = append(dropped, w.written)
			return nil
		}
		if err := t.validate(w); err != nil {
			return err
		}
		flags = append(flags, w.flag)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return flags, dropped, nil
}

// flagWord is one option of the flags annotation: flag in the form sluice
// emits, not yet validated, and the words it was written as.
type flagWord struct {
	flag, written string
}

// validate checks w.flag with ValidateFlag, naming the words it was written
// as when they differ from it.
func (t *Options) validate(w flagWord) error {
	err := t.ValidateFlag(w.flag)
	if err != nil && w.written != w.flag {
		return fmt.Errorf("%q: %w", w.written, err)
	}
	return err
}

// eachFlag splits annotation into options and calls take with each, in the
// form sluice emits (canonicalFlag), in order, up to the first error, its
// own or take's: an option's refusal comes before that of the words after
// it.
func (t *Options) eachFlag(annotation string, take func(flagWord) error) error {
	words, err := SplitWords(annotation)
	if err != nil {
		return err
	}
	prev := ""
	for i := 0; i < len(words); i++ {
		word := words[i]
		next := ""
		if i+1 < len(words) && !strings.HasPrefix(words[i+1], "-") {
			next = words[i+1]
		}
		flag, usedNext, err := t.canonicalFlag(word, next)
		if err != nil {
			return t.optionalValueHint(err, prev, word)
		}
		written := word
		if usedNext {
			written += " " + next
			i++
		}
		if err := take(flagWord{flag: flag, written: written}); err != nil {
			return err
		}
		prev = flag
	}
	return nil
}

// optionalValueHint adds to err, the refusal of word, how to give word as
// the value of prev, the flag before it ("" for none), when that flag's
// value is optional (--exclusive user): sbatch takes such a value only
// after '='.
func (t *Options) optionalValueHint(err error, prev, word string) error {
	if prev == "" || strings.HasPrefix(word, "-") {
		return err
	}
	if kind, _ := t.option(prev[2:]); strings.Contains(prev, "=") || kind != argOptional {
		return err
	}
	return fmt.Errorf("%w; %s takes its value as %s=%s", err, prev, prev, word)
}

// canonicalFlag turns word, an option as written, into "--name" or
// "--name=value", taking next (the following word, "" when there is none
// or it is an option) as its value when the option requires one and word
// has none. It reports whether it took next.
func (t *Options) canonicalFlag(word, next string) (string, bool, error) {
	switch {
	case strings.HasPrefix(word, "--"):
		if strings.Contains(word, "=") {
			return word, false, nil
		}
		if kind, _ := t.option(word[2:]); kind == argRequired && next != "" {
			return word + "=" + next, true, nil
		}
		return word, false, nil
	case len(word) >= 2 && word[0] == '-':
		long, ok := t.shortOption(word[1])
		if !ok {
			return "", false, fmt.Errorf("%q: %s -%c%s", word, t.whose(), word[1], t.unknownNote())
		}
		attached := word[2:]
		if kind, _ := t.option(long); kind != argRequired {
			if attached != "" {
				return "", false, fmt.Errorf("%q: -%c (--%s) takes no value; write one option per word", word, word[1], long)
			}
			return "--" + long, false, nil
		}
		switch {
		case strings.HasPrefix(attached, "="):
			return "", false, fmt.Errorf("%q: write -%c value or --%s=value", word, word[1], long)
		case attached != "":
			return "--" + long + "=" + attached, false, nil
		case next != "":
			return "--" + long + "=" + next, true, nil
		}
		return "", false, fmt.Errorf("%q: -%c (--%s) needs a value (-%c value)", word, word[1], long, word[1])
	}
	return "", false, fmt.Errorf("%q is not an sbatch option (a value goes right after its option)", word)
}

// SplitWords splits the value of an annotation into shell words
// (shellWords), refusing NUL and CR.
func SplitWords(s string) ([]string, error) {
	if strings.ContainsAny(s, "\x00\r") {
		return nil, errors.New("NUL and CR characters are not allowed")
	}
	return shellWords(s)
}

// shellWords splits s into words as a shell would, without expanding
// anything: words are separated by spaces, tabs and line breaks; single
// quotes keep what they hold as it is; double quotes group, and within them
// a backslash escapes the next character; outside quotes a backslash
// escapes the next character. An unterminated quote or a trailing
// backslash is an error.
func shellWords(s string) ([]string, error) {
	var words []string
	var word strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				word.WriteByte(c)
			}
		case c == '\\':
			if i+1 == len(s) {
				return nil, errors.New("a backslash ends the value: it escapes nothing")
			}
			i++
			word.WriteByte(s[i])
			inWord = true
		case quote == '"':
			if c == '"' {
				quote = 0
			} else {
				word.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("the quote %c is not closed", quote)
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}
