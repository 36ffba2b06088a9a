// Package sbatchtest reads batch scripts as sbatch does, for the tests of
// the packages that check and write sbatch flags.
package sbatchtest

import (
	"strings"
	"unicode"
)

// Words reads the words of an #SBATCH line as sbatch does: words are
// split at white space; single and double quotes group and are removed; a
// backslash takes the next character as it is; an unquoted '#' starts a
// comment; the line ends at a newline. It returns nil for a line that is not
// an #SBATCH line.
func Words(line string) []string {
	rest, ok := strings.CutPrefix(line, "#SBATCH")
	if !ok {
		return nil
	}
	var words []string
	var word strings.Builder
	inWord, escaped := false, false
	var quote byte
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		switch {
		case escaped:
			word.WriteByte(c)
			escaped = false
		case c == '\n' && quote == 0:
			i = len(rest)
			continue
		case c == '\\':
			escaped, inWord = true, true
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			word.WriteByte(c)
		case c == '"' || c == '\'':
			quote, inWord = c, true
		case c == '#':
			i = len(rest)
			continue
		case c < 0x80 && unicode.IsSpace(rune(c)):
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
	if inWord {
		words = append(words, word.String())
	}
	return words
}

// Header returns the #SBATCH lines at the head of a script, as sbatch
// reads them: up to the first line that is neither blank nor a comment.
func Header(script string) []string {
	var lines []string
	for _, line := range strings.Split(script, "\n")[1:] {
		if strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "#") {
			break
		}
		if strings.HasPrefix(line, "#SBATCH") {
			lines = append(lines, line)
		}
	}
	return lines
}
