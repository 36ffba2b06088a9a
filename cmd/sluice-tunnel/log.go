package main

import (
	"io"
	"log/slog"
)

// newLogger returns the tunnel's logger: JSON lines (or text with format
// "text") on w, from level up, each carrying the mode.
func newLogger(w io.Writer, format string, level slog.Level, mode string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewJSONHandler(w, opts)
	if format == "text" {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(h).With("component", "sluice-tunnel", "mode", mode)
}
