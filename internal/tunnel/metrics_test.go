package tunnel

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"golang.org/x/crypto/ssh"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg, "reverse")
	m.SetUp(true)
	m.ConnOpened(6379)
	m.ConnOpened(6379)
	m.ConnOpened(9000)
	m.ConnClosed()
	m.AddBytes(BytesIn, 10)
	m.AddBytes(BytesOut, 3)
	m.AddBytes(BytesOut, 4)
	m.Reconnect()
	m.Refused(RefusedDial)
	m.Refused(RefusedDial)
	m.Refused(RefusedHostKey)

	want := `
# HELP sluice_tunnel_up 1 while the tunnel's SSH connection to the site is established, else 0.
# TYPE sluice_tunnel_up gauge
sluice_tunnel_up{mode="reverse"} 1
# HELP sluice_tunnel_connections_active Connections open through the tunnel.
# TYPE sluice_tunnel_connections_active gauge
sluice_tunnel_connections_active{mode="reverse"} 2
# HELP sluice_tunnel_reconnects_total SSH connections to the site made again after one was lost.
# TYPE sluice_tunnel_reconnects_total counter
sluice_tunnel_reconnects_total{mode="reverse"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"sluice_tunnel_up", "sluice_tunnel_connections_active", "sluice_tunnel_reconnects_total"); err != nil {
		t.Error(err)
	}
	for _, c := range []struct {
		name string
		got  prometheus.Collector
		want float64
	}{
		{"connections port 6379", m.conns.WithLabelValues("6379"), 2},
		{"connections port 9000", m.conns.WithLabelValues("9000"), 1},
		{"bytes in", m.bytes.WithLabelValues(BytesIn), 10},
		{"bytes out", m.bytes.WithLabelValues(BytesOut), 7},
		{"refused dial", m.refused.WithLabelValues(RefusedDial), 2},
		{"refused host key", m.refused.WithLabelValues(RefusedHostKey), 1},
	} {
		if got := testutil.ToFloat64(c.got); got != c.want {
			t.Errorf("%s = %v; want %v", c.name, got, c.want)
		}
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) != 0 {
		t.Errorf("lint: %v, %v", problems, err)
	}

	m.SetUp(false)
	if got := testutil.ToFloat64(m.up); got != 0 {
		t.Errorf("up after SetUp(false) = %v; want 0", got)
	}
}

func TestMetricsTwoModesOneRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := NewMetrics(reg, "forward")
	r := NewMetrics(reg, "reverse")
	f.Reconnect()
	r.Reconnect()
	r.Reconnect()
	// The same mode again shares the registered metrics instead of failing.
	again := NewMetrics(reg, "reverse")
	again.Reconnect()

	want := `
# HELP sluice_tunnel_reconnects_total SSH connections to the site made again after one was lost.
# TYPE sluice_tunnel_reconnects_total counter
sluice_tunnel_reconnects_total{mode="forward"} 1
sluice_tunnel_reconnects_total{mode="reverse"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "sluice_tunnel_reconnects_total"); err != nil {
		t.Error(err)
	}
}

func TestMetricsNil(t *testing.T) {
	var m *Metrics
	m.SetUp(true)
	m.ConnOpened(1)
	m.ConnClosed()
	m.AddBytes(BytesIn, 1)
	m.Reconnect()
	m.Refused(RefusedNoNode)
	m.Cut(CutIdle)
	m.Stalled(1)
}

func TestMetricsUnregistered(t *testing.T) {
	m := NewMetrics(nil, "forward")
	m.AddBytes(BytesIn, 5)
	if got := testutil.ToFloat64(m.bytesIn); got != 5 {
		t.Errorf("bytes in = %v; want 5", got)
	}
}

func TestRefusal(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{errNoNode, RefusedNoNode},
		{wrapf("connect: %w in 1s: %w", errBackoff, errFake), RefusedBackoff},
		{wrapf("connect: %w in 1s: %w", errBackoff, hostKeyErr(t)), RefusedHostKey},
		{wrapf("connect: %w", hostKeyErr(t)), RefusedHostKey},
		{wrapf("dial: %w", openChannelErr()), RefusedDial},
		{errFake, RefusedConnect},
	} {
		if got := refusal(c.err); got != c.want {
			t.Errorf("refusal(%v) = %q; want %q", c.err, got, c.want)
		}
	}
}

var errFake = errors.New("fake failure")

func wrapf(format string, errs ...any) error { return fmt.Errorf(format, errs...) }

func hostKeyErr(t *testing.T) error {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return &sshx.HostKeyError{Host: "node1:22", Key: key, Err: errFake}
}

func openChannelErr() error {
	return &ssh.OpenChannelError{Reason: ssh.ConnectionFailed, Message: "connect failed"}
}
