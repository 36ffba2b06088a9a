package jobscript

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	corev1 "k8s.io/api/core/v1"
)

func TestCheckScriptText(t *testing.T) {
	for _, tc := range []struct {
		text, want string
	}{
		{"", ""},
		{"echo ok\necho two", ""},
		{"a\rb", ""},   // sbatch takes a lone CR
		{"a\r", ""},    // and one before the closing quote
		{"a\n\rb", ""}, // LF CR is not CR LF
		{"a\r\nb", "CR LF"},
		{"\r\n", "CR LF"},
		{"a\x00b", "NUL"},
	} {
		err := checkScriptText(tc.text)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("checkScriptText(%q) = %v; want nil", tc.text, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("checkScriptText(%q) = %v; want an error naming %s", tc.text, err, tc.want)
		}
	}
}

// What sbatch takes is not refused: a CR LF in an env value (the env file
// is not the script) and a lone CR in an argument; the script holds no
// CR LF.
func TestScriptTextKept(t *testing.T) {
	pod := fullPod([3]string{"busybox", "python:3", "/img.sif"})
	pod.Spec.Containers[1].Env = []corev1.EnvVar{{Name: "DOS", Value: "a\r\nb"}}
	pod.Spec.Containers[1].Args = []string{"a\rb", "c\r"}
	job, err := FromPod(context.Background(), pod, scripttest.NewSources(pod.Namespace), PodOptions{Runtime: RuntimeApptainer})
	if err != nil {
		t.Fatalf("FromPod: %v", err)
	}
	script, err := Script(job, ScriptOptions{JobDir: "/data/job", Runtime: RuntimeApptainer})
	if err != nil {
		t.Fatalf("Script: %v", err)
	}
	if bytes.Contains(script, []byte("\r\n")) || !bytes.Contains(script, []byte("a\rb")) {
		t.Errorf("script holds a CR LF, or lost the lone CR:\n%q", script)
	}
}

// A Job built by hand, not by FromPod, is checked too.
func TestScriptRefusesWhatSbatchRefuses(t *testing.T) {
	for _, edit := range []func(*Job){
		func(j *Job) { j.Containers[0].Args = []string{"a\r\nb"} },
		func(j *Job) { j.Containers[0].Command = []string{"sh", "-c", "a\x00"} },
		func(j *Job) { j.PreExec = "x\r\n" },
		func(j *Job) { j.Flags = []string{"--nosuch"} },
	} {
		job := &Job{Namespace: "ns", Name: "p", UID: "0b5c",
			Containers: []Container{{Name: "main", Image: "/img", Command: []string{"true"}}}}
		edit(job)
		if s, err := Script(job, ScriptOptions{JobDir: "/data/job", Runtime: RuntimeCharliecloud}); err == nil {
			t.Errorf("Script rendered %+v:\n%q", job, s)
		}
	}
}
