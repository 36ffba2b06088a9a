// Package vkslog lets the virtual-kubelet library log through log/slog.
package vkslog

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
)

// slogLogger lets the virtual-kubelet library log through slog.
type slogLogger struct{ l *slog.Logger }

var _ vklog.Logger = slogLogger{}

func (s slogLogger) Debug(args ...any)                 { s.l.Debug(fmt.Sprint(args...)) }
func (s slogLogger) Debugf(format string, args ...any) { s.l.Debug(fmt.Sprintf(format, args...)) }
func (s slogLogger) Info(args ...any)                  { s.l.Info(fmt.Sprint(args...)) }
func (s slogLogger) Infof(format string, args ...any)  { s.l.Info(fmt.Sprintf(format, args...)) }
func (s slogLogger) Warn(args ...any)                  { s.l.Warn(fmt.Sprint(args...)) }
func (s slogLogger) Warnf(format string, args ...any)  { s.l.Warn(fmt.Sprintf(format, args...)) }
func (s slogLogger) Error(args ...any)                 { s.l.Error(fmt.Sprint(args...)) }
func (s slogLogger) Errorf(format string, args ...any) { s.l.Error(fmt.Sprintf(format, args...)) }

// Fatal and Fatalf log and exit, as the library's contract asks; sluice's
// own code never calls them.
func (s slogLogger) Fatal(args ...any) {
	s.l.Error(fmt.Sprint(args...))
	os.Exit(1)
}

func (s slogLogger) Fatalf(format string, args ...any) {
	s.l.Error(fmt.Sprintf(format, args...))
	os.Exit(1)
}

func (s slogLogger) WithField(k string, v any) vklog.Logger { return slogLogger{s.l.With(k, v)} }
func (s slogLogger) WithError(err error) vklog.Logger       { return slogLogger{s.l.With("error", err)} }

func (s slogLogger) WithFields(f vklog.Fields) vklog.Logger {
	args := make([]any, 0, 2*len(f))
	for k, v := range f {
		args = append(args, k, v)
	}
	return slogLogger{s.l.With(args...)}
}

// New returns a library logger writing to l.
func New(l *slog.Logger) vklog.Logger { return slogLogger{l} }

// WithContext makes the library log through l in ctx, each line marked
// component=virtual-kubelet. The library's global logger is left alone.
func WithContext(ctx context.Context, l *slog.Logger) context.Context {
	return vklog.WithLogger(ctx, New(l.With("component", "virtual-kubelet")))
}
