package site

import "strings"

// Quote quotes s for a POSIX shell: the shell reads the result back as one
// word equal to s, with nothing expanded. Strings made only of characters
// that are never special (letters, digits and _@%+:,./-) are left as they
// are; everything else, the empty string included, is put in single quotes,
// where each single quote of s is written as quote, backslash, quote, quote:
//
//	it's  →  'it'\''s'
//
// No shell word can hold a NUL byte; Run refuses arguments that contain one.
func Quote(s string) string {
	if s != "" && !strings.ContainsFunc(s, special) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Join quotes each argument and joins them with spaces into one command
// line that a POSIX shell splits back into exactly args.
func Join(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(Quote(a))
	}
	return b.String()
}

// special reports whether r may mean something to a shell. '=' counts: a
// leading NAME=value word is an assignment, not a command.
func special(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return false
	}
	return !strings.ContainsRune("_@%+:,./-", r)
}
