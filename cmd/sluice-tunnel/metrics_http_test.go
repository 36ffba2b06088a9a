package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/tunnel"
)

func TestMetricsHandler(t *testing.T) {
	reg := newRegistry()
	m := tunnel.NewMetrics(reg, modeReverse)
	m.SetUp(true)
	m.ConnOpened(6379)
	status := tunnel.NewStatus(modeReverse)
	srv := httptest.NewServer(metricsHandler(reg, status))
	defer srv.Close()

	body, code := get(srv.URL + "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: status %d", code)
	}
	for _, want := range []string{
		`sluice_tunnel_up{mode="reverse"} 1`,
		`sluice_tunnel_connections_total{mode="reverse",port="6379"} 1`,
		"go_goroutines ",
		"process_cpu_seconds_total ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if body, code := get(srv.URL + "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz = %d %q; want 200 \"ok\\n\"", code, body)
	}
	body, code = get(srv.URL + "/status")
	var snap tunnel.Snapshot
	if err := json.Unmarshal([]byte(body), &snap); code != http.StatusOK || err != nil {
		t.Fatalf("/status = %d %q (%v); want 200 and a snapshot", code, body, err)
	}
	if snap.Mode != modeReverse || snap.State != tunnel.StateWaiting {
		t.Errorf("/status = %+v; want mode reverse, state waiting", snap)
	}
	resp, err := http.Post(srv.URL+"/healthz", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /healthz: status %d; want 405", resp.StatusCode)
	}
}
