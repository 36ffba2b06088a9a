// Package textcut shortens text for messages without splitting a character.
//
// What sluice quotes in an Event, a log line or a refusal is often the
// pod's or the site's text, in any script; a byte cut in the middle of a
// UTF-8 sequence would make the message invalid UTF-8, which the API
// server stores mangled and JSON logs escape.
package textcut

import "unicode/utf8"

// Cut returns s when it is at most max bytes long; otherwise its longest
// prefix of at most max bytes that ends on a character boundary, followed
// by mark.
func Cut(s string, max int, mark string) string {
	if len(s) <= max {
		return s
	}
	if max < 0 {
		max = 0
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
