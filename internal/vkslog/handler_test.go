package vkslog

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

func TestNewLoggerFormats(t *testing.T) {
	var buf bytes.Buffer
	l, err := NewLogger(&buf, FormatJSON, slog.LevelInfo)
	if err != nil {
		t.Fatal(err)
	}
	l.Debug("hidden")
	l.Info("shown", "n", 1)
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("json line %q: %v", buf.String(), err)
	}
	if rec["msg"] != "shown" || rec["n"] != float64(1) {
		t.Errorf("got %v; want msg shown, n 1", rec)
	}

	buf.Reset()
	if l, err = NewLogger(&buf, FormatText, slog.LevelDebug); err != nil {
		t.Fatal(err)
	}
	l.Debug("shown")
	if got := buf.String(); !strings.Contains(got, "level=DEBUG msg=shown") {
		t.Errorf("got %q; want a text line at DEBUG", got)
	}

	if _, err := NewLogger(&buf, "yaml", slog.LevelInfo); err == nil || !strings.Contains(err.Error(), `"yaml"`) {
		t.Errorf("format yaml: got %v; want an error naming it", err)
	}
}

func TestRouteKlog(t *testing.T) {
	var buf bytes.Buffer
	l, err := NewLogger(&buf, FormatJSON, slog.LevelInfo)
	if err != nil {
		t.Fatal(err)
	}
	RouteKlog(l)
	defer klog.ClearLogger()
	klog.InfoS("watch restarted", "resource", "pods")
	klog.ErrorS(errors.New("connection refused"), "list failed")
	klog.Flush()

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines %q; want 2", len(lines), buf.String())
	}
	for i, want := range []map[string]any{
		{"msg": "watch restarted", "resource": "pods", "component": "client-go", "level": "INFO"},
		{"msg": "list failed", "error": "connection refused", "component": "client-go", "level": "ERROR"},
	} {
		var rec map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &rec); err != nil {
			t.Fatalf("line %d %q: %v", i, lines[i], err)
		}
		for k, v := range want {
			if rec[k] != v {
				t.Errorf("line %d: %s = %v; want %v (%s)", i, k, rec[k], v, lines[i])
			}
		}
	}
}
