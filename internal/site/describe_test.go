package site

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakePath makes a directory holding sh, head and grep from the machine and
// the fake programs given (name → sh script), and makes it the whole PATH.
func fakePath(t *testing.T, fakes map[string]string) {
	t.Helper()
	dir := t.TempDir()
	for _, tool := range []string{"sh", "head", "grep"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("no %s: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	for name, script := range fakes {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!"+filepath.Join(dir, "sh")+"\n"+script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
}

func TestDescribeLocal(t *testing.T) {
	fakePath(t, map[string]string{
		"sinfo":  `echo "slurm 23.11.4"`,
		"ch-run": `echo "0.38" >&2; exit 1`, // ch-run says it on stderr
		"uname":  `case "$1" in -m) echo aarch64 ;; *) echo "6.1.0-27-amd64" ;; esac`,
	})
	got, err := Describe(context.Background(), &Local{}, "ch-run")
	if err != nil {
		t.Fatal(err)
	}
	if got.Slurm != "23.11.4" || got.RuntimeVersion != "0.38" || got.Kernel != "6.1.0-27-amd64" {
		t.Errorf("got %+v; want Slurm 23.11.4, runtime 0.38, kernel 6.1.0-27-amd64", got)
	}
	if got.Machine != "aarch64" || KubeArch(got.Machine) != "arm64" {
		t.Errorf("machine %q (%q); want aarch64, arm64 to Kubernetes", got.Machine, KubeArch(got.Machine))
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil && strings.Contains(string(b), "PRETTY_NAME=") && got.OS == "" {
		t.Errorf("OS empty; want the PRETTY_NAME of /etc/os-release")
	}
}

// TestDescribeMissing: a site without Slurm or the runtime on the PATH
// tells nothing of them, and no "not found" message becomes a version.
func TestDescribeMissing(t *testing.T) {
	fakePath(t, nil)
	got, err := Describe(context.Background(), &Local{}, "apptainer")
	if err != nil {
		t.Fatal(err)
	}
	if got.Slurm != "" || got.RuntimeVersion != "" || got.Kernel != "" || got.Machine != "" {
		t.Errorf("got %+v; want no Slurm, runtime, kernel or machine", got)
	}
}

// TestDescribeHostile: programs that print megabytes without a newline,
// control sequences, or lines posing as other keys are cut and stripped.
func TestDescribeHostile(t *testing.T) {
	fakePath(t, map[string]string{
		"sinfo":     `printf '\033[31mslurm 99.1\nos=PRETTY_NAME="Evil"\n'`,
		"apptainer": `i=0; while [ $i -lt 20000 ]; do printf 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'; i=$((i+1)); done`,
		"uname":     `printf 'a\tb\001c"d\\e%0300d\n' 7`,
	})
	got, err := Describe(context.Background(), &Local{}, "apptainer")
	if err != nil {
		t.Fatal(err)
	}
	if got.Slurm != "99.1" || got.RuntimeVersion != "" {
		t.Errorf("got %+v; want Slurm 99.1 and no runtime version", got)
	}
	if !strings.HasPrefix(got.Kernel, "a bcde000") || len(got.Kernel) != maxInfoLen {
		t.Errorf("kernel %q; want %q cut to %d bytes", got.Kernel, "a bcde000…", maxInfoLen)
	}
	if got.Machine != got.Kernel || KubeArch(got.Machine) != "" {
		t.Errorf("machine %q (%q); want it cut as the kernel and no architecture", got.Machine, KubeArch(got.Machine))
	}
	if got.OS == "Evil" {
		t.Errorf("OS %q: a line of sinfo's output was taken for the os line", got.OS)
	}
}

// TestDescribeOutputLimit: a site whose head(1) does not cut (here cat)
// and whose sinfo prints a megabyte is read no further than
// maxDescribeOutput.
func TestDescribeOutputLimit(t *testing.T) {
	fakePath(t, map[string]string{
		"sinfo": `i=0; while [ $i -lt 20000 ]; do printf 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'; i=$((i+1)); done`,
	})
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	dir := os.Getenv("PATH")
	if err := os.Remove(filepath.Join(dir, "head")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(cat, filepath.Join(dir, "head")); err != nil {
		t.Fatal(err)
	}
	if _, err := Describe(context.Background(), &Local{}, ""); !errors.Is(err, ErrOutputLimit) {
		t.Errorf("Describe = %v; want ErrOutputLimit", err)
	}
}

func TestParseDescribe(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      Info
	}{
		{"debian", "slurm=slurm-wlm 22.05.8\nruntime=0.31\nkernel=6.18.44\nos=PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n",
			Info{Slurm: "22.05.8", RuntimeVersion: "0.31", Kernel: "6.18.44", OS: "Debian GNU/Linux 12 (bookworm)"}},
		{"apptainer", "runtime=apptainer version 1.3.4-1.el9\nos=PRETTY_NAME='Rocky Linux 9.4 (Blue Onyx)'\n",
			Info{RuntimeVersion: "1.3.4-1.el9", OS: "Rocky Linux 9.4 (Blue Onyx)"}},
		{"first key wins", "slurm=slurm 23.02.1\nslurm=slurm 1.0\n", Info{Slurm: "23.02.1"}},
		{"no version", "slurm=command not found\nruntime=\n", Info{}},
		{"os without PRETTY_NAME", "os=NAME=x\n", Info{}},
		{"unknown keys and junk", "junk\nfoo=bar\n\x00\xff=1\n", Info{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseDescribe([]byte(tc.out)); got != tc.want {
				t.Errorf("got %+v; want %+v", got, tc.want)
			}
		})
	}
}

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"  a  b\t c ":           "a b c",
		"\x1b[31mred\x1b[0m":    "[31mred[0m",
		"q\"u'o`t\\e":           "quote",
		"caf\xc3\xa9":           "caf",
		strings.Repeat("v", 99): strings.Repeat("v", maxInfoLen),
	} {
		if got := clean(in); got != want {
			t.Errorf("clean(%q) = %q; want %q", in, got, want)
		}
	}
}

// FuzzParseDescribe: whatever the site prints, every field is printable
// ASCII of at most maxInfoLen bytes, without quotes.
func FuzzParseDescribe(f *testing.F) {
	f.Add([]byte("slurm=slurm-wlm 22.05.8\nruntime=0.31\nkernel=6.1\nos=PRETTY_NAME=\"Debian\"\n"))
	f.Add([]byte("os=PRETTY_NAME=\"\x1b]0;title\x07\"\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		got := parseDescribe(out)
		for _, v := range []string{got.Slurm, got.RuntimeVersion, got.Kernel, got.OS} {
			if len(v) > maxInfoLen {
				t.Fatalf("field %q longer than %d", v, maxInfoLen)
			}
			for i := 0; i < len(v); i++ {
				if c := v[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\'' || c == '\\' {
					t.Fatalf("field %q has byte %#x", v, c)
				}
			}
		}
	})
}

func TestKubeArch(t *testing.T) {
	for machine, want := range map[string]string{
		"x86_64": "amd64", "aarch64": "arm64", "ppc64le": "ppc64le", "s390x": "s390x",
		"i686": "386", "armv7l": "arm", "sparc64": "", "": "", "X86_64": "", "ppc64": "",
	} {
		if got := KubeArch(machine); got != want {
			t.Errorf("KubeArch(%q) = %q; want %q", machine, got, want)
		}
	}
}
