package chart

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestProbes: sluice-vk serves /healthz and /readyz on health.port, and the
// kubelet probes them: startup and readiness on /readyz, liveness on
// /healthz.
func TestProbes(t *testing.T) {
	for _, name := range []string{"default", "ha", "tenant"} {
		r := render(t, name, "--set", "health.port=10300")
		c := r.deployments[0].Spec.Template.Spec.Containers[0]
		if !slices.Contains(c.Args, "--health-listen=:10300") {
			t.Errorf("%s: args %q; want --health-listen=:10300", name, c.Args)
		}
		if got := containerPorts(r)["health"]; got != 10300 {
			t.Errorf("%s: health port %d; want 10300", name, got)
		}
		for probe, want := range map[*corev1.Probe]string{c.StartupProbe: "/readyz", c.ReadinessProbe: "/readyz", c.LivenessProbe: "/healthz"} {
			if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != want || probe.HTTPGet.Port.String() != "health" {
				t.Errorf("%s: probe %+v; want GET %s on the health port", name, probe, want)
			}
		}
	}
}

// TestDashboardAndAlerts: off by default; on, the dashboard is a ConfigMap
// with Grafana's sidecar label holding the dashboard's JSON, and the alerts
// a PrometheusRule whose tunnel alerts take tunnelSelector.
func TestDashboardAndAlerts(t *testing.T) {
	out, err := template(t, "-f", values("default"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "grafana_dashboard") || strings.Contains(out, "kind: PrometheusRule") {
		t.Error("a dashboard or PrometheusRule rendered by default; want them off")
	}
	r := render(t, "default", "--set", "metrics.dashboard.enabled=true", "--set", "metrics.dashboard.labels.team=hpc")
	var dash *corev1.ConfigMap
	for _, c := range r.configMaps {
		if c.Labels["grafana_dashboard"] == "1" {
			dash = c
		}
	}
	if dash == nil || dash.Labels["team"] != "hpc" {
		t.Fatalf("no ConfigMap labelled grafana_dashboard: \"1\" and team: hpc")
	}
	var d struct {
		UID    string
		Panels []struct{ Title string }
	}
	if err := json.Unmarshal([]byte(dash.Data["sluice.json"]), &d); err != nil || d.UID == "" || len(d.Panels) < 10 {
		t.Errorf("dashboard: %v, uid %q, %d panels; want a Grafana dashboard", err, d.UID, len(d.Panels))
	}

	out, err = template(t, "-f", values("default"), "--set", "metrics.prometheusRule.enabled=true",
		"--set", `metrics.prometheusRule.tunnelSelector=namespace=~"team-a.*"`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind: PrometheusRule", "alert: SluiceSiteUnreachable", "alert: SluiceSubmissionsWaiting",
		"alert: SluiceTunnelsLost", "alert: SluiceLeaderChanges", `sluice_vk_site_reachable{namespace="sluice-system"}`,
		`sluice_tunnel_up{namespace=~"team-a.*"}`, "{{ $labels.pod }}"} {
		if !strings.Contains(out, want) {
			t.Errorf("the PrometheusRule lacks %s", want)
		}
	}
}

// TestHelmTestRunsDoctor: helm test runs `sluice-vk doctor` with the
// configuration and credentials sluice-vk mounts, and no API token.
func TestHelmTestRunsDoctor(t *testing.T) {
	for _, name := range []string{"default", "tenant"} {
		r := render(t, name)
		if len(r.tests) != 1 {
			t.Fatalf("%s: %d helm test objects; want the doctor Pod", name, len(r.tests))
		}
		pod, ok := r.tests[0].(*corev1.Pod)
		if !ok {
			t.Fatalf("%s: helm test object %T; want a Pod", name, r.tests[0])
		}
		c := pod.Spec.Containers[0]
		vk := r.deployments[0].Spec.Template.Spec
		if c.Image != vk.Containers[0].Image || len(c.Args) == 0 || c.Args[0] != "doctor" || pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("%s: doctor image %s args %q restart %s; want sluice-vk's image running doctor once", name, c.Image, c.Args, pod.Spec.RestartPolicy)
		}
		if a := pod.Spec.AutomountServiceAccountToken; a == nil || *a {
			t.Errorf("%s: the doctor Pod mounts an API token; want none", name)
		}
		for _, m := range vk.Containers[0].VolumeMounts {
			if m.Name != "tmp" && !slices.ContainsFunc(c.VolumeMounts, func(d corev1.VolumeMount) bool { return d.Name == m.Name && d.MountPath == m.MountPath }) {
				t.Errorf("%s: the doctor Pod lacks sluice-vk's mount %s", name, m.MountPath)
			}
		}
	}
}
