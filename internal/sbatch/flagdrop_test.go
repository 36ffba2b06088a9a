package sbatch

import (
	"reflect"
	"strings"
	"testing"
)

// A pod's job name is dropped in every spelling sbatch takes; everything
// else sluice sets stays refused, with its reason.
func TestPodFlagsDropTheJobName(t *testing.T) {
	tests := []struct {
		in      string
		flags   []string
		dropped []string
		err     string
	}{
		{"--job-name=tutorial --mem=100M", []string{"--mem=100M"}, []string{"--job-name=tutorial"}, ""},
		{"--job-name tutorial", nil, []string{"--job-name tutorial"}, ""},
		{"-J tutorial -p debug", []string{"--partition=debug"}, []string{"-J tutorial"}, ""},
		{"-Jtutorial", nil, []string{"-Jtutorial"}, ""},
		{"--job-n=x --job=y --j=z", nil, []string{"--job-n=x", "--job=y", "--j=z"}, ""},
		{"--job-name='my job'", nil, []string{"--job-name=my job"}, ""},
		{"--job-name=test-pod-cfg -t 2800  --ntasks=8 --nodes=1 --mem-per-cpu=2000", []string{"--time=2800", "--ntasks=8", "--nodes=1", "--mem-per-cpu=2000"}, []string{"--job-name=test-pod-cfg"}, ""},
		{"--partition=cn-ib --job-name=testsl -t 30  --ntasks=1 --nodes=1", []string{"--partition=cn-ib", "--time=30", "--ntasks=1", "--nodes=1"}, []string{"--job-name=testsl"}, ""},
		// what sbatch itself refuses stays refused
		{"--job-name", nil, nil, "--job-name is set by sluice"},
		{"-J", nil, nil, "-J (--job-name) needs a value"},
		{"-J=x", nil, nil, "write -J value or --job-name=value"},
		// the other options sluice sets
		{"--jobid=3", nil, nil, "--jobid is set by sluice"},
		{"-J x -o /tmp/x", nil, nil, "--output is set by sluice"},
		{"--output=/tmp/x --job-name=x", nil, nil, "--output is set by sluice"},
		{"--wrap=id -J x", nil, nil, "--wrap is set by sluice"},
		{"-D /scratch", nil, nil, "--chdir is set by sluice"},
		{"-a 1-3", nil, nil, "--array is set by sluice"},
		{"--comment=x", nil, nil, "--comment is set by sluice"},
		{"-J x --gpu=1", nil, nil, "sbatch has no option --gpu"},
		{"-J x gpu", nil, nil, `"gpu" is not an sbatch option`},
		{"-J 'x\n#SBATCH --wrap=id' --qos='a\n#SBATCH --wrap=id'", nil, nil, "without spaces, quotes"},
	}
	for _, tt := range tests {
		flags, dropped, err := (*Options)(nil).PodFlags(tt.in)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("PodFlags(%q) = %q, %q, %v; want an error containing %q", tt.in, flags, dropped, err, tt.err)
			}
			if flags != nil || dropped != nil {
				t.Errorf("PodFlags(%q) = %q, %q with its error; want nothing", tt.in, flags, dropped)
			}
		case err != nil || !reflect.DeepEqual(flags, tt.flags) || !reflect.DeepEqual(dropped, tt.dropped):
			t.Errorf("PodFlags(%q) = %q, %q, %v; want %q, %q", tt.in, flags, dropped, err, tt.flags, tt.dropped)
		}
	}
}

// The site's own flags (a flavor's SlurmFlags) name no job either: a job
// name there stays an error at start-up, as SplitFlags gives it.
func TestSplitFlagsRefusesTheJobName(t *testing.T) {
	for _, in := range []string{"--job-name=x", "-J x", "-Jx", "--job-n=x"} {
		if _, err := SplitFlags(in); err == nil || !strings.Contains(err.Error(), "--job-name is set by sluice") {
			t.Errorf("SplitFlags(%q): %v; want --job-name refused", in, err)
		}
	}
}

// PodFlags differs from SplitFlags only by the job names it drops: what it
// refuses SplitFlags refuses; without a job name it gives what SplitFlags
// gives; with one, SplitFlags refused the annotation, and every flag kept
// is one ValidateFlag takes.
func FuzzPodFlags(f *testing.F) {
	for _, s := range []string{
		"--job-name=tutorial --mem=100M", "-J x -p debug", "-Jx", "--job-n=x", "--job=x", "-J",
		"--job-name=a -o b", "-J 'a b'", "--job-name=\x01", "-p gpu -t 10", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		flags, dropped, err := (*Options)(nil).PodFlags(in)
		strict, serr := SplitFlags(in)
		switch {
		case err != nil:
			if serr == nil || flags != nil || dropped != nil {
				t.Fatalf("PodFlags(%q) = %q, %q, %v; SplitFlags = %q, %v", in, flags, dropped, err, strict, serr)
			}
			return
		case len(dropped) == 0:
			if serr != nil || !reflect.DeepEqual(flags, strict) {
				t.Fatalf("PodFlags(%q) = %q; SplitFlags = %q, %v", in, flags, strict, serr)
			}
			return
		case serr == nil:
			t.Fatalf("PodFlags(%q) dropped %q; SplitFlags took it: %q", in, dropped, strict)
		}
		for _, fl := range flags {
			if err := ValidateFlag(fl); err != nil {
				t.Fatalf("PodFlags(%q) kept %q: %v", in, fl, err)
			}
		}
		for _, d := range dropped {
			if !strings.HasPrefix(d, "-") {
				t.Fatalf("PodFlags(%q) dropped %q, not an option", in, d)
			}
		}
	})
}
