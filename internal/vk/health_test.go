package vk

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/site"
)

func TestHealthJudgement(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	running := health{started: t0, synced: true, registered: true}
	with := func(edit func(*health)) health {
		s := running
		edit(&s)
		return s
	}
	for _, tt := range []struct {
		name  string
		s     health
		now   time.Time
		live  string // a word of the liveness error; "" for live
		ready string // likewise for readiness
	}{
		{"starting, nothing yet", health{}, t0, "", "not started"},
		{"node running and registered", running, t0.Add(time.Hour), "", ""},
		{"node started, not registered", with(func(s *health) { s.registered = false }), t0.Add(10 * time.Second), "", "not registered"},
		{"informer syncing, within the grace", with(func(s *health) { s.synced = false }), t0.Add(time.Minute), "", ""},
		{"informer never synced", with(func(s *health) { s.synced = false }), t0.Add(3 * time.Minute), "not synced", "not synced"},
		{"squeue polling", with(func(s *health) { s.commands = []site.Command{{Name: "squeue", Started: t0}} }), t0.Add(time.Minute), "", ""},
		{"sbatch stuck past its deadline", with(func(s *health) {
			s.commands = []site.Command{{Name: "sbatch", Started: t0, Deadline: t0.Add(5 * time.Minute)}}
		}), t0.Add(7 * time.Minute), "wedged: sbatch", "wedged"},
		{"squeue stuck without a deadline", with(func(s *health) { s.commands = []site.Command{{Name: "squeue", Started: t0}} }), t0.Add(11 * time.Minute), "wedged: squeue", "wedged"},
		{"standby knowing its leader", health{elected: true, leader: "vk-0_ab"}, t0, "", ""},
		{"standby with no leader seen", health{elected: true}, t0, "", "no leader"},
		{"leader holding its lease", with(func(s *health) { s.elected, s.leading = true, true }), t0, "", ""},
		{"leader past its lease", with(func(s *health) {
			s.elected, s.leading, s.leaseErr = true, true, errors.New("failed election to renew leadership on lease sluice-vk-hpc")
		}), t0, "leader election", "leader election"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			check := func(what string, err error, want string) {
				switch {
				case want == "" && err != nil:
					t.Errorf("%s: got %v; want nil", what, err)
				case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
					t.Errorf("%s: got %v; want an error saying %q", what, err, want)
				}
			}
			check("live", tt.s.live(tt.now), tt.live)
			check("ready", tt.s.ready(tt.now), tt.ready)
		})
	}
}

// The handlers answer 200 ok, or 503 with the reason; a nil Health (no
// node) is live and ready.
func TestHealthHandler(t *testing.T) {
	var h Health
	srv := httptest.NewServer(healthHandler(&h, slog.New(slog.DiscardHandler)))
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: got %d %q; want 200 ok", code, body)
	}
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "node not started") {
		t.Errorf("/readyz before the node: got %d %q; want 503 node not started", code, body)
	}
	registered := make(chan struct{})
	close(registered)
	h.nodeStarted(func() bool { return true }, registered, nil)
	if code, body := get("/readyz"); code != 200 {
		t.Errorf("/readyz with the node registered: got %d %q; want 200", code, body)
	}
	if code, _ := get("/metrics"); code != 404 {
		t.Errorf("/metrics: got %d; want 404", code)
	}
	var none *Health
	if none.Live() != nil || none.Ready() != nil {
		t.Error("a nil Health is not live and ready")
	}
}
