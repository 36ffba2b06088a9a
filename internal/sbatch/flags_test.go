package sbatch

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/sbatch/sbatchtest"
)

func TestValidateFlag(t *testing.T) {
	tests := []struct {
		flag string
		ok   bool
	}{
		{"--partition=gpu", true},
		{"--exclusive", true},
		{"--mem=4G", true},
		{"--constraint=a&b|c", true},
		{"--gpus-per-node=a100:2", true},
		{"--mail-user=a@b.org", true},
		{"--export=ALL,FOO=$BAR", true},
		{"--account=x%y", true},
		{"--overcommit", true},
		{"--partition", false},      // sbatch: option '--partition' requires an argument
		{"--contiguous=yes", false}, // sbatch: option '--contiguous' doesn't allow an argument
		{"--exclusive=user", true},
		{"--nice", true},
		{"--nice=10", true},
		{"--foo=1", false},    // sbatch: unrecognized option '--foo=1'
		{"--part=gpu", false}, // an abbreviation: written in full
		{"--mail=x", false},   // ambiguous to sbatch
		{"--tasks-per-node=2", true},
		{"", false},
		{"-p gpu", false},
		{"-pgpu", false},
		{"-J", false},
		{"--", false},
		{"--=x", false},
		{"--Partition=x", false},
		{"--partition=", false},
		{"--partition=a b", false},
		{"--partition=a\tb", false},
		{"--partition=a\nb", false},
		{"--partition=a\r", false},
		{"--partition=a\x00", false},
		{"--partition='gpu'", false},
		{`--partition="gpu"`, false},
		{`--partition=a\b`, false},
		{"--partition=a#b", false},
		{"--partition=é", false},
		{"--partition=a\u00a0b", false},
		{"#SBATCH --x", false},
		{"--job-name=x", false},
		{"--job=x", false},
		{"--jobid=3", false},
		{"--output=/tmp/x", false},
		{"--out=/tmp/x", false},
		{"--o=/tmp/x", false},
		{"--error=/tmp/x", false},
		{"--input=/etc/passwd", false},
		{"--chdir=/", false},
		{"--ch=/", false},
		{"--comment=x", false},
		{"--wrap=id", false},
		{"--parsable", false},
		{"--par", false},
		{"--array=1-3", false},
		{"--clusters=a", false},
		{"--cluster=a", false},
		{"--test-only", false},
		{"--wait", false},
		{"--version", false},
		{"--help", false},
		{"--usage", false},
		{"--uid=0", false},
		{"--gid=0", false},
		{"--quiet", false},
		// Options that only share a prefix with a reserved one stay allowed.
		{"--wait-all-nodes=1", true},
		{"--overcommit", true},
		{"--cluster-constraint=x", true},
		{"--exclude=n1", true},
		{"--partition=p", true},
	}
	for _, tt := range tests {
		err := ValidateFlag(tt.flag)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateFlag(%q) = %v; want ok %v", tt.flag, err, tt.ok)
		}
	}
}

func TestSplitFlags(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"", nil, ""},
		{"\n\n \t", nil, ""},
		// one option per line, as sluice read them before
		{"--partition=gpu\n  --exclusive \n\n--mem=1G", []string{"--partition=gpu", "--exclusive", "--mem=1G"}, ""},
		// as interLink's users write them
		{"--partition=gpu --gres=gpu:1", []string{"--partition=gpu", "--gres=gpu:1"}, ""},
		{"-p gpu -t 01:00:00 --mem=4G", []string{"--partition=gpu", "--time=01:00:00", "--mem=4G"}, ""},
		{"-N 2 --ntasks-per-node=4", []string{"--nodes=2", "--ntasks-per-node=4"}, ""},
		{"--partition=cn-ib -t 30  --ntasks=1 --nodes=1", []string{"--partition=cn-ib", "--time=30", "--ntasks=1", "--nodes=1"}, ""},
		{"-p gpu --gres=gpu:1 --ntasks-per-node=1 --nodes=1 --time=00:30:00", []string{"--partition=gpu", "--gres=gpu:1", "--ntasks-per-node=1", "--nodes=1", "--time=00:30:00"}, ""},
		{"-A proj -C a100 -G 2 -c 8 -n 4 -w node[01-02]", []string{"--account=proj", "--constraint=a100", "--gpus=2", "--cpus-per-task=8", "--ntasks=4", "--nodelist=node[01-02]"}, ""},
		{"-q debug -x node03 -b now+1hour -d afterok:12 -L matlab:1 -S 2 -B 2:4:1 -m cyclic", []string{"--qos=debug", "--exclude=node03", "--begin=now+1hour", "--dependency=afterok:12", "--licenses=matlab:1", "--core-spec=2", "--extra-node-info=2:4:1", "--distribution=cyclic"}, ""},
		{"--partition gpu --qos high", []string{"--partition=gpu", "--qos=high"}, ""},
		{"-pgpu -t10 -N2", []string{"--partition=gpu", "--time=10", "--nodes=2"}, ""},
		{"--exclusive --exclusive=user --nice --nice=10 --requeue -H -O -s -v -k", []string{"--exclusive", "--exclusive=user", "--nice", "--nice=10", "--requeue", "--hold", "--overcommit", "--oversubscribe", "--verbose", "--no-kill"}, ""},
		{"--mail-type=END,FAIL --mail-user=a@b.org", []string{"--mail-type=END,FAIL", "--mail-user=a@b.org"}, ""},
		// --export is the pod's to choose: the job script needs nothing from
		// the environment of sbatch, and says what it misses in PATH.
		{"--export=NONE", []string{"--export=NONE"}, ""},
		{"--export ALL,OMP_NUM_THREADS=4", []string{"--export=ALL,OMP_NUM_THREADS=4"}, ""},
		// quotes, as a shell command line would have them
		{`--constraint="a&b|c" -C 'x|y'`, []string{"--constraint=a&b|c", "--constraint=x|y"}, ""},
		{`"--partition=gpu" --qos=\high`, []string{"--partition=gpu", "--qos=high"}, ""},
		{`-p "gpu"`, []string{"--partition=gpu"}, ""},
		// reserved, in every way of writing them
		{"--output=/tmp/x", nil, "--output is set by sluice and cannot be changed: sluice reads the job's output"},
		{"--output /tmp/x", nil, `"--output /tmp/x": sbatch flag "--output=/tmp/x": --output is set by sluice`},
		{"-o /tmp/x", nil, `"-o /tmp/x": sbatch flag "--output=/tmp/x": --output is set by sluice`},
		{"-o/tmp/x", nil, "--output is set by sluice"},
		{"--out=/tmp/x", nil, "--output is set by sluice"},
		{"-e err", nil, "--error is set by sluice"},
		{"-D /scratch", nil, "--chdir is set by sluice and cannot be changed: the job runs in its job directory"},
		{"--chdir=/", nil, "--chdir is set by sluice"},
		{"-J myjob", nil, "--job-name is set by sluice and cannot be changed: sluice names the job after the pod UID"},
		{"--partition=cn-ib --job-name=testsl", nil, "--job-name is set by sluice"},
		{"--wrap=id", nil, "--wrap is set by sluice and cannot be changed: the job's script is sluice's"},
		{"--wrap id", nil, "--wrap is set by sluice"},
		{"-a 1-3", nil, "--array is set by sluice"},
		{"-M other", nil, "--clusters is set by sluice"},
		{"-W", nil, "--wait is set by sluice"},
		{"--parsable", nil, "--parsable is set by sluice"},
		{"-i /etc/passwd", nil, "--input is set by sluice"},
		{"--uid=0", nil, "--uid is set by sluice"},
		// malformed
		{"--partition=gpu gpu2", nil, `"gpu2" is not an sbatch option`},
		{"gpu", nil, `"gpu" is not an sbatch option`},
		{"--exclusive user", nil, `"user" is not an sbatch option (a value goes right after its option); --exclusive takes its value as --exclusive=user`},
		{"--partition", nil, "--partition needs a value"},
		{"--partition --qos=x", nil, "--partition needs a value"},
		{"-p", nil, "-p (--partition) needs a value"},
		{"-p -t 10", nil, "-p (--partition) needs a value"},
		{"-p=gpu", nil, "write -p value or --partition=value"},
		{"-Hx", nil, "-H (--hold) takes no value"},
		{"-vv", nil, "takes no value"},
		{"-Z 1", nil, "sbatch has no option -Z"},
		{"-", nil, `"-" is not an sbatch option`},
		{"--", nil, "want one option"},
		{"--part=gpu", nil, "write the option in full: --partition"},
		{"--part gpu", nil, "write the option in full: --partition"},
		{"--foo=1", nil, "sbatch has no option --foo"},
		{"--contiguous=yes", nil, "--contiguous takes no value"},
		{`--constraint="a b"`, nil, "without spaces"},
		{`--comment=a\ b`, nil, "without spaces"},
		{`--qos="x`, nil, "quote \" is not closed"},
		{`--qos='x`, nil, "quote ' is not closed"},
		{`--qos=x\`, nil, "backslash ends the value"},
		{`--qos="it's"`, nil, "quotes, backslashes"},
		{"--qos=a#b", nil, "quotes, backslashes and '#'"},
		{"# a comment\n--qos=x", nil, `"#" is not an sbatch option`},
		{"--partition=gpu\r\n--exclusive", nil, "NUL and CR characters are not allowed"},
		{"--qos=a\x00b", nil, "NUL and CR"},
		{"--qos=é", nil, "printable ASCII"},
		{"--qos=a\vb", nil, "printable ASCII"},
		{"#SBATCH --x", nil, "is not an sbatch option"},
	}
	for _, tt := range tests {
		got, err := SplitFlags(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("SplitFlags(%q) = %q, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SplitFlags(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// Every short option stands for a long option sbatch knows, and takes a
// value exactly when it does (-k, whose long option's value is optional,
// takes none).
func TestShortOptionsMapToLongOnes(t *testing.T) {
	for short, long := range sbatchShortOptions {
		kind, ok := sbatchOptions[long]
		if !ok {
			t.Errorf("-%c stands for --%s, which sbatchOptions lacks", short, long)
			continue
		}
		flags, err := SplitFlags(fmt.Sprintf("-%c x", short))
		switch {
		case kind == argRequired && (err != nil) != (reservedFlag(long) != ""):
			t.Errorf("SplitFlags(-%c x) = %q, %v; want --%s=x, refused only when reserved", short, flags, err, long)
		case kind == argRequired && err == nil && flags[0] != "--"+long+"=x":
			t.Errorf("SplitFlags(-%c x) = %q; want --%s=x", short, flags, long)
		case kind != argRequired && err == nil:
			t.Errorf("SplitFlags(-%c x) = %q; want the value refused: -%c takes none", short, flags, short)
		}
	}
}

// FuzzSplitFlags checks that SplitFlags never panics, and that what it
// accepts round-trips: the flags it gives, written back one per line or on
// one line, split again into the same flags. (The job script's
// FuzzScriptTakesSplitFlags checks that each becomes one #SBATCH line.)
func FuzzSplitFlags(f *testing.F) {
	for _, s := range []string{
		"--partition=gpu\n--exclusive", "-p gpu -t 01:00:00 --mem=4G", "-N 2 --ntasks-per-node=4",
		`--constraint="a&b" -C 'x|y'`, "-pgpu", "--qos high", "--exclusive user",
		"--a=b c", "--a=b#c", "--a='b'", "--a=b\\", "--a=b\r--c", "-o x", "-D /",
		"--out=x", "-p x", "--mem=1G\n\n --time=10 ", "--export=NONE", "\"--qos=\\\"x\"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, annotation string) {
		flags, err := SplitFlags(annotation)
		if err != nil {
			return
		}
		for _, flag := range flags {
			if strings.ContainsAny(flag, "\n\x00\r") {
				t.Fatalf("flag %q holds a line break or NUL", flag)
			}
			if err := ValidateFlag(flag); err != nil {
				t.Fatalf("SplitFlags(%q) gave %q, which ValidateFlag refuses: %v", annotation, flag, err)
			}
		}
		for _, sep := range []string{"\n", " "} {
			again, err := SplitFlags(strings.Join(flags, sep))
			if err != nil || !slices.Equal(again, flags) {
				t.Fatalf("SplitFlags(%q) = %q; split again (%q): %q, %v", annotation, flags, sep, again, err)
			}
		}
	})
}

// FuzzValidateFlag checks the same property on single flags, and that a
// valid flag is never a reserved option or an abbreviation of one.
func FuzzValidateFlag(f *testing.F) {
	for _, s := range []string{"--partition=gpu", "--out", "--a=b\nc", "--a=\"b\"", "--j"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, flag string) {
		if ValidateFlag(flag) != nil {
			return
		}
		if words := sbatchtest.Words("#SBATCH " + flag + "\n"); len(words) != 1 || words[0] != flag {
			t.Fatalf("sbatch reads %q as %q", flag, words)
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
		for r := range reservedFlags {
			if strings.HasPrefix(r, name) {
				t.Fatalf("flag %q passes but abbreviates --%s", flag, r)
			}
		}
		kind, known := sbatchOptions[name]
		if !known || kind == argRequired && !hasValue || kind == argNone && hasValue {
			t.Fatalf("flag %q passes but sbatch refuses it", flag)
		}
	})
}
