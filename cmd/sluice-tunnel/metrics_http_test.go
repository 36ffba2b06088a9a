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
	if body, code := get(srv.URL + "/readyz"); code != http.StatusServiceUnavailable || body != "waiting\n" {
		t.Errorf("/readyz = %d %q; want 503 \"waiting\\n\"", code, body)
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

// TestReadyHandler: ready when the tunnel is up, and only then.
func TestReadyHandler(t *testing.T) {
	for _, tc := range []struct {
		snap tunnel.Snapshot
		code int
		body string
	}{
		{tunnel.Snapshot{State: tunnel.StateUp, Node: "node1"}, http.StatusOK, "up\n"},
		{tunnel.Snapshot{State: tunnel.StateWaiting}, http.StatusServiceUnavailable, "waiting\n"},
		{tunnel.Snapshot{State: tunnel.StateConnecting, Node: "node1"}, http.StatusServiceUnavailable, "connecting\n"},
		{tunnel.Snapshot{State: tunnel.StateDown, Node: "node1", Error: "dial tcp: connection refused"}, http.StatusServiceUnavailable,
			"down: dial tcp: connection refused\n"},
		{tunnel.Snapshot{State: tunnel.StateHostKeyRejected, Error: "host key mismatch"}, http.StatusServiceUnavailable,
			"host-key-rejected: host key mismatch\n"},
	} {
		t.Run(string(tc.snap.State), func(t *testing.T) {
			rec := httptest.NewRecorder()
			readyHandler(func() tunnel.Snapshot { return tc.snap }).ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
			if rec.Code != tc.code || rec.Body.String() != tc.body {
				t.Errorf("/readyz = %d %q; want %d %q", rec.Code, rec.Body.String(), tc.code, tc.body)
			}
		})
	}
}
