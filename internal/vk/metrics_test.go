package vk

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/version"
)

func TestMetricsBuildInfo(t *testing.T) {
	ms, err := newMetricsServer("127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ms.serve(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	resp, err := http.Get("http://" + ms.ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	want := `sluice_vk_build_info{go_version="`
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, want) {
			if !strings.Contains(line, `version="`+version.String()+`"} 1`) {
				t.Errorf("got %q; want version %s and value 1", line, version.String())
			}
			return
		}
	}
	t.Errorf("no line %s… in /metrics:\n%s", want, body)
}
