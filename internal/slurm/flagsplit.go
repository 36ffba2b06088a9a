package slurm

import (
	"errors"
	"fmt"
	"strings"
)

// SplitFlags reads the value of AnnotationFlags as interLink's Slurm plugin
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
// those of sluice's built-in table (SbatchOptions.SplitFlags reads a
// site's).
func SplitFlags(annotation string) ([]string, error) {
	return (*SbatchOptions)(nil).SplitFlags(annotation)
}

// SplitFlags reads annotation as the package's SplitFlags does, with the
// options of t.
func (t *SbatchOptions) SplitFlags(annotation string) ([]string, error) {
	words, err := splitWords(annotation)
	if err != nil {
		return nil, err
	}
	var flags []string
	for i := 0; i < len(words); i++ {
		word := words[i]
		next := ""
		if i+1 < len(words) && !strings.HasPrefix(words[i+1], "-") {
			next = words[i+1]
		}
		flag, usedNext, err := t.canonicalFlag(word, next)
		if err != nil {
			return nil, t.optionalValueHint(err, flags, word)
		}
		written := word
		if usedNext {
			written += " " + next
			i++
		}
		if err := t.ValidateFlag(flag); err != nil {
			if written != flag {
				return nil, fmt.Errorf("%q: %w", written, err)
			}
			return nil, err
		}
		flags = append(flags, flag)
	}
	return flags, nil
}

// optionalValueHint adds to err, the refusal of word, how to give word as
// the value of the flag before it when that flag's value is optional
// (--exclusive user): sbatch takes such a value only after '='.
func (t *SbatchOptions) optionalValueHint(err error, flags []string, word string) error {
	if len(flags) == 0 || strings.HasPrefix(word, "-") {
		return err
	}
	prev := flags[len(flags)-1]
	if kind, _ := t.option(prev[2:]); strings.Contains(prev, "=") || kind != argOptional {
		return err
	}
	return fmt.Errorf("%w; %s takes its value as %s=%s", err, prev, prev, word)
}

// canonicalFlag turns word, an option as written, into "--name" or
// "--name=value", taking next (the following word, "" when there is none
// or it is an option) as its value when the option requires one and word
// has none. It reports whether it took next.
func (t *SbatchOptions) canonicalFlag(word, next string) (string, bool, error) {
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

// splitWords splits the value of an annotation into shell words
// (shellWords), refusing NUL and CR.
func splitWords(s string) ([]string, error) {
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
