package jobscript

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	"github.com/sluice-hpc/sluice/internal/testrig"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// These tests take a pod all the way: FromPod, the files and script written
// to a job directory, the script run for real.

// envPod's container prints what reached it through env, args and volumes.
func envPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "env-check", UID: "00000000-0000-4000-8000-00000000000e"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:    "show",
			Image:   "busybox",
			Command: []string{"sh", "-c", `printf '%s\n' "$QUOTED" "$MULTI" "$DEPENDENT" "$DB_PASSWORD" "$0"`},
			Args:    []string{"arg-$(POD_NAME)"},
			Env: []corev1.EnvVar{
				{Name: "QUOTED", Value: `it's "quoted" $HOME \ ` + "`id`"},
				{Name: "MULTI", Value: "one\ntwo"},
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "DEPENDENT", Value: "$(POD_NAME)/$$(POD_NAME)"},
				{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "db-secret"}, Key: "password"}}},
			},
		}}},
	}
}

var envPodLog = []string{
	`it's "quoted" $HOME \ ` + "`id`", "one", "two", "env-check/$(POD_NAME)", `p@ss'w"rd $1`, "arg-env-check",
}

func TestPodRunsUnderNone(t *testing.T) {
	for _, shell := range shells {
		t.Run(shell, func(t *testing.T) {
			job := fromPod(t, envPod(), RuntimeNone)
			dir := runJobWith(t, shell, job, RuntimeNone)
			wantLog(t, dir, "show", envPodLog...)
			wantFile(t, dir, JobExitFile, "0\n")
		})
	}
}

// chImage makes a Charliecloud image directory holding busybox, with the
// mount points a pod needs; without ch-run the test is skipped (failed in CI).
func chImage(t *testing.T, mountPoints ...string) string {
	t.Helper()
	if _, err := exec.LookPath("ch-run"); err != nil {
		testrig.Unavailable(t, "ch-run not installed: "+err.Error())
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		testrig.Unavailable(t, "busybox not installed, no image to build: "+err.Error())
	}
	img := filepath.Join(t.TempDir(), "img")
	dirs := append([]string{"bin", "etc", "dev", "proc", "sys", "tmp", "home", "mnt", "run"}, mountPoints...)
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(img, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(busybox)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(img, "bin/busybox"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, applet := range []string{"sh", "cat", "printf", "pwd", "ls", "touch", "true"} {
		if err := os.Symlink("busybox", filepath.Join(img, "bin", applet)); err != nil {
			t.Fatal(err)
		}
	}
	for name, line := range map[string]string{"passwd": "root:x:0:0::/:/bin/sh\n", "group": "root:x:0:\n"} {
		if err := os.WriteFile(filepath.Join(img, "etc", name), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	probe := exec.Command("ch-run", img, "--", "true")
	probe.Env = append(os.Environ(), "USER=sluice")
	if out, err := probe.CombinedOutput(); err != nil {
		testrig.Unavailable(t, fmt.Sprintf("ch-run cannot run containers here: %v: %s", err, out))
	}
	return img
}

func TestPodRunsUnderCharliecloud(t *testing.T) {
	const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	img := chImage(t, "work", "etc/app", "scratch", saDir)
	pod := envPod()
	pod.Spec.Containers[0].Image = img
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"},
		}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		kubeAPIAccess("kube-api-access-abcde"),
	}
	pod.Spec.InitContainers = []corev1.Container{{
		Name: "prepare", Image: img, WorkingDir: "/work",
		Command:      []string{"sh", "-c", "pwd; cat /etc/app/mode; echo; cat " + saDir + "/namespace; echo; touch /scratch/prepared"},
		VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}, {Name: "scratch", MountPath: "/scratch"}, {Name: "kube-api-access-abcde", MountPath: saDir}},
	}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	pod.Spec.Containers[0].Command[2] += `; ls /scratch`
	src := scripttest.NewSources(pod.Namespace)
	job, err := FromPod(context.Background(), pod, src, PodOptions{Runtime: RuntimeCharliecloud})
	if err != nil {
		t.Fatal(err)
	}
	dir := runJobWith(t, "sh", job, RuntimeCharliecloud)
	wantLog(t, dir, "prepare", "/work", "fast", "ns")
	wantLog(t, dir, "show", append(envPodLog, "prepared")...)
	wantFile(t, dir, JobExitFile, "0\n")
	if t.Failed() {
		t.Logf("job.out:\n%s", readFile(t, dir, JobOutFile))
	}
}
