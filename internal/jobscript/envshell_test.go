package jobscript

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	"github.com/sluice-hpc/sluice/internal/site"
)

// nodeShells are the /bin/sh of the nodes sluice runs on: bash (RHEL family)
// as sh and as bash, and dash (Debian family). A shell missing here is
// skipped.
func nodeShells(t *testing.T) map[string][]string {
	t.Helper()
	found := map[string][]string{}
	if bash, err := exec.LookPath("bash"); err == nil {
		sh := filepath.Join(t.TempDir(), "sh") // bash named sh runs in POSIX mode
		if err := os.Symlink(bash, sh); err != nil {
			t.Fatal(err)
		}
		found["bash as sh"] = []string{sh}
		found["bash"] = []string{bash}
	}
	if dash, err := exec.LookPath("dash"); err == nil {
		found["dash"] = []string{dash}
	}
	if len(found) < 3 {
		t.Logf("shells found: %v", found)
	}
	return found
}

// runEnvFile sources data in sh as sluice_run does and returns the
// environment the command it then runs gets.
func runEnvFile(t *testing.T, sh []string, data []byte) (map[string]string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	args := append(sh[1:], "-c", `(set -a; . "$1"; set +a; exec env -0) || exit`, "sh", path)
	cmd := exec.Command(sh[0], args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, stderr.String())
	}
	vars := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	return vars, nil
}

// allowedSpecials are names with a meaning to some shell that every shell
// assigns and exports as given.
var allowedSpecials = []string{"IFS", "PATH", "HOME", "PS1", "PS4", "ENV", "BASH_ENV", "CDPATH", "POSIXLY_CORRECT",
	"BASH", "BASH_VERSION", "BASH_COMMAND", "BASH_REMATCH", "BASH_XTRACEFD", "HOSTNAME", "OSTYPE", "MAILCHECK",
	"TMOUT", "OPTARG", "SHLVL", "LANG", "TZ", "LD_LIBRARY_PATH"}

// Every name the pod may set reaches the container with its value, under
// every shell that may read the env file.
func TestEnvFileUnderEveryShell(t *testing.T) {
	var vars []envEntry
	want := map[string]string{}
	for i, name := range append([]string{"A", "_x", "camelCase", "DB_PASSWORD", "MULTI"}, allowedSpecials...) {
		if err := checkEnvName(name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		v := `it's "quoted" $HOME \ back` + "`id`\nline " + strings.Repeat("x", i)
		if name == "PATH" {
			v = os.Getenv("PATH") // exec still finds env
		}
		vars = append(vars, envEntry{Name: name, Value: v})
		want[name] = v
	}
	data, err := formatEnvFile(vars)
	if err != nil {
		t.Fatal(err)
	}
	for name, sh := range nodeShells(t) {
		got, err := runEnvFile(t, sh, data)
		if err != nil {
			t.Errorf("%s: sourcing the env file failed: %v", name, err)
			continue
		}
		for k, v := range want {
			if got[k] != v {
				_, present := got[k]
				t.Errorf("%s: %s = %q (set %v, %d vars); want %q", name, k, got[k], present, len(got), v)
			}
		}
	}
}

// Names bash keeps for itself are refused, with the reason, wherever a
// pod sets them: bash would end the container (read-only names) or drop
// the value.
func TestShellReservedEnvNamesRefused(t *testing.T) {
	for _, name := range shellReserved {
		// Proof that the shell cannot set it: bash as sh fails or drops it.
		for shell, sh := range nodeShells(t) {
			if !strings.HasPrefix(shell, "bash") {
				continue
			}
			passes := true
			for _, v := range []string{"9", "not a number"} {
				got, err := runEnvFile(t, sh, []byte(name+"="+site.Quote(v)+"\n"))
				passes = passes && err == nil && got[name] == v
			}
			if passes && !bash53Only[name] {
				t.Errorf("%s passes %s on: it need not be refused", shell, name)
			}
		}
		pod := scripttest.SimplePod("busybox")
		pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "OK", Value: "1"}, {Name: name, Value: "9"}}
		_, err := FromPod(context.Background(), pod, scripttest.NewSources(pod.Namespace), PodOptions{Runtime: RuntimeApptainer})
		var pe *PodError
		if !errors.As(err, &pe) || pe.Field != "spec.containers[0].env[1].name" || !strings.Contains(pe.Reason, "bash") {
			t.Errorf("env %s: got %v; want a pod error naming env[1].name and bash", name, err)
		}
		pod.Spec.Containers[0].Env = nil
		pod.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
		_, err = FromPod(context.Background(), pod, reservedSources(pod.Namespace, name), PodOptions{Runtime: RuntimeApptainer})
		if !errors.As(err, &pe) || pe.Field != "spec.containers[0].envFrom[0]" || !strings.Contains(pe.Reason, name) {
			t.Errorf("envFrom key %s: got %v; want a pod error naming envFrom[0] and the key", name, err)
		}
		if _, err := formatEnvFile([]envEntry{{Name: name, Value: "9"}}); err == nil {
			t.Errorf("formatEnvFile took %s", name)
		}
	}
}

// reservedSources holds a ConfigMap "settings" with the key name.
func reservedSources(ns, name string) *scripttest.Sources {
	s := scripttest.NewSources(ns)
	s.ConfigMaps[ns+"/settings"] = &corev1.ConfigMap{Data: map[string]string{"MODE": "fast", name: "9"}}
	return s
}
