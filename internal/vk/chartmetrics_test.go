package vk

import (
	"log/slog"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
)

// chartMetricFiles are the chart's files that name metrics in PromQL.
var chartMetricFiles = []string{
	"../../charts/sluice/files/dashboard.json",
	"../../charts/sluice/templates/prometheusrule.yaml",
}

// metricName finds a metric of sluice's, or of the Go and process
// collectors both binaries register, in PromQL.
var metricName = regexp.MustCompile(`\b(sluice_[a-z0-9_]+|process_[a-z0-9_]+|go_[a-z0-9_]+)\b`)

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// registered lists the names of every metric sluice-vk and sluice-tunnel
// register, as Prometheus exposes them (a histogram's series too).
func registered(t *testing.T) map[string]bool {
	t.Helper()
	ms, err := newMetricsServer("127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.ln.Close()
	if err := ms.registerNode(&provider.NodeStatus{}); err != nil {
		t.Fatal(err)
	}
	if err := ms.registerLeader(&Health{}); err != nil {
		t.Fatal(err)
	}
	if err := provider.RegisterMetrics(ms.reg); err != nil {
		t.Fatal(err)
	}
	r, err := site.NewSSH(site.SSHConfig{Addr: "127.0.0.1:22", User: "alice",
		Auth: []ssh.AuthMethod{ssh.Password("unused")}, HostKeyCallback: ssh.FixedHostKey(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	collectors := []prometheus.Collector{ms.reg, sshCollector{r}, newCertExpiry("/nonexistent")}
	tunnels := prometheus.NewRegistry()
	tunnel.NewMetrics(tunnels, "forward")
	collectors = append(collectors, tunnels)

	names := map[string]bool{}
	for _, c := range collectors {
		ch := make(chan *prometheus.Desc, 1000)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			m := fqName.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("no name in %s", d)
			}
			names[m[1]] = true
		}
	}
	for n := range names {
		if strings.HasSuffix(n, "_duration_seconds") { // a histogram
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[n+s] = true
			}
		}
	}
	return names
}

// Every metric the chart's Grafana dashboard and PrometheusRule alerts name
// is one sluice-vk or sluice-tunnel registers: a renamed metric fails here,
// not in an operator's empty panel or silent alert.
func TestChartNamesRegisteredMetrics(t *testing.T) {
	names := registered(t)
	used := map[string]bool{}
	for _, f := range chartMetricFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		found := metricName.FindAllString(string(b), -1)
		if len(found) < 5 {
			t.Fatalf("%s names %d metrics; want the file that names them", f, len(found))
		}
		for _, n := range found {
			used[n] = true
			if !names[n] {
				t.Errorf("%s names %s, which neither sluice-vk nor sluice-tunnel registers", f, n)
			}
		}
	}
	// what the alerts of the issue watch
	for _, n := range []string{"sluice_vk_site_reachable", "sluice_vk_submit_waits_total", "sluice_tunnel_up", "sluice_vk_leader_changes_total",
		"sluice_vk_ssh_connections_total", "sluice_vk_ssh_connect_failures_total", "sluice_vk_ssh_sessions"} {
		if !used[n] {
			t.Errorf("the chart's dashboard and alerts do not use %s", n)
		}
	}
	var unused []string
	for n := range names {
		if strings.HasPrefix(n, "sluice_") && !used[n] && !strings.HasSuffix(n, "_bucket") && !strings.HasSuffix(n, "_sum") && !strings.HasSuffix(n, "_count") {
			unused = append(unused, n)
		}
	}
	sort.Strings(unused)
	t.Logf("sluice metrics on no panel or alert: %v", unused)
}
