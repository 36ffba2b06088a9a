package vkslog

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
)

func TestWithContext(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, nil))
	ctx := WithContext(context.Background(), l)
	vklog.G(ctx).WithFields(vklog.Fields{"pod": "ns/a"}).WithField("n", 2).Infof("synced %d", 3)
	got := buf.String()
	for _, want := range []string{"msg=\"synced 3\"", "component=virtual-kubelet", "pod=ns/a", "n=2"} {
		if !strings.Contains(got, want) {
			t.Errorf("log line %q lacks %s", got, want)
		}
	}
}
