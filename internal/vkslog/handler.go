package vkslog

import (
	"fmt"
	"io"
	"log/slog"

	"k8s.io/klog/v2"
)

// The log formats of --log-format.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// ErrorKey is the one key sluice's log lines carry an error under.
const ErrorKey = "error"

// NewLogger returns a logger writing to w in format (FormatText or
// FormatJSON) from level on. An error logged under "err" (as logr, and so
// klog's ErrorS, does) is written under ErrorKey, so that one key finds
// every error.
func NewLogger(w io.Writer, format string, level slog.Leveler) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: oneErrorKey}
	switch format {
	case FormatText:
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case FormatJSON:
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: must be %s or %s", format, FormatJSON, FormatText)
}

// RouteKlog sends what client-go and the other Kubernetes libraries log
// through klog to l, each line marked component=client-go, instead of
// klog's own lines on stderr.
func RouteKlog(l *slog.Logger) {
	klog.SetSlogLogger(l.With("component", "client-go"))
}

// oneErrorKey renames a top-level "err" attribute to ErrorKey.
func oneErrorKey(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == "err" {
		a.Key = ErrorKey
	}
	return a
}
