package jobscript

import (
	"regexp"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/config"
)

var commentLine = regexp.MustCompile(`(?m)^#SBATCH --comment=.*$`)

// TestScriptHasNoCommentByDefault: squeue and sacct show a job's comment to
// every user of the site; by default the job carries none, and its #SBATCH
// lines name neither the pod's namespace nor its name.
func TestScriptHasNoCommentByDefault(t *testing.T) {
	job := testJob()
	job.Namespace, job.Name = "secret-team", "quarterly-merger-model"
	script, err := Script(job, ScriptOptions{JobDir: "/data/ns-uid", Runtime: RuntimeApptainer})
	if err != nil {
		t.Fatalf("Script: %v", err)
	}
	if line := commentLine.Find(script); line != nil {
		t.Errorf("script has %q; want no comment", line)
	}
	for l := range strings.Lines(string(script)) {
		if strings.HasPrefix(l, "#SBATCH") && (strings.Contains(l, job.Namespace) || strings.Contains(l, job.Name)) {
			t.Errorf("#SBATCH line %q names the pod", strings.TrimSpace(l))
		}
	}
}

// TestScriptComment: a site's template gives the comment, its placeholders
// filled with the pod's namespace and name.
func TestScriptComment(t *testing.T) {
	for tmpl, want := range map[string]string{
		"{namespace}/{name}":    "#SBATCH --comment=ns/pod",
		"sluice":                "#SBATCH --comment=sluice",
		"k8s:{namespace}@hpc-a": "#SBATCH --comment=k8s:ns@hpc-a",
	} {
		o, err := NewSiteOptions(config.Site{ContainerRuntime: "apptainer", JobComment: tmpl})
		if err != nil {
			t.Fatalf("NewSiteOptions(JobComment %q): %v", tmpl, err)
		}
		script, err := Script(testJob(), ScriptOptions{JobDir: "/data/ns-uid", Runtime: RuntimeApptainer, Site: o})
		if err != nil {
			t.Fatalf("Script(%q): %v", tmpl, err)
		}
		if got := string(commentLine.Find(script)); got != want {
			t.Errorf("JobComment %q: got %q; want %q", tmpl, got, want)
		}
		checkShell(t, script)
	}
}

func TestJobCommentRefused(t *testing.T) {
	for tmpl, want := range map[string]string{
		"{uid}":                      "the only placeholders are",
		"{namespace":                 "the only placeholders are",
		"a b":                        "want letters, digits",
		"x\n#SBATCH --uid=0":         "want letters, digits",
		"'x'":                        "want letters, digits",
		"%j":                         "want letters, digits",
		strings.Repeat("a", 257):     "257 bytes long",
		"{namespace}#{name}":         "want letters, digits",
		"{namespace}/{name};reboot":  "want letters, digits",
		"{name}\x00":                 "want letters, digits",
		"{namespace}/{name} {name}":  "want letters, digits",
		"comment=\"{namespace}\"":    "want letters, digits",
		"{namespace}/{name}/{other}": "the only placeholders are",
	} {
		_, err := NewSiteOptions(config.Site{ContainerRuntime: "apptainer", JobComment: tmpl})
		if err == nil || !strings.Contains(err.Error(), "Site.JobComment: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("JobComment %q: got %v; want an error naming Site.JobComment and saying %q", tmpl, err, want)
		}
	}
	if _, err := jobComment("{name}", "ns", "a b"); err == nil {
		t.Error("a name with a space gave a comment")
	}
}

// FuzzJobComment: whatever the template and the pod's names, a comment
// either is refused or is one word of the characters an #SBATCH line takes.
func FuzzJobComment(f *testing.F) {
	f.Add("{namespace}/{name}", "ns", "pod")
	f.Add("x{name}y", "ns", "a b")
	f.Fuzz(func(t *testing.T, tmpl, namespace, name string) {
		c, err := jobComment(tmpl, namespace, name)
		if err != nil {
			return
		}
		if !commentText.MatchString(c) || strings.ContainsAny(c, " \t\n\"'#%{}") {
			t.Fatalf("jobComment(%q, %q, %q) = %q", tmpl, namespace, name, c)
		}
	})
}
