package slurm

import (
	"reflect"
	"strings"
	"testing"
	"unicode"
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

func TestParseFlags(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"", nil, ""},
		{"\n\n", nil, ""},
		{"--partition=gpu\n  --exclusive \r\n\n--mem=1G", []string{"--partition=gpu", "--exclusive", "--mem=1G"}, ""},
		{"--partition=gpu --exclusive", nil, "line 1"},
		{"--exclusive\n--output=/x", nil, "line 2: sbatch flag \"--output=/x\": --output is set by sluice"},
		{"--exclusive\n-p gpu", nil, "line 2"},
	}
	for _, tt := range tests {
		got, err := ParseFlags(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseFlags(%q) error = %v; want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseFlags(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// sbatchWords reads the words of an #SBATCH line as sbatch does: words are
// split at white space; single and double quotes group and are removed; a
// backslash takes the next character as it is; an unquoted '#' starts a
// comment; the line ends at a newline. It returns nil for a line that is not
// an #SBATCH line.
func sbatchWords(line string) []string {
	rest, ok := strings.CutPrefix(line, "#SBATCH")
	if !ok {
		return nil
	}
	var words []string
	var word strings.Builder
	inWord, escaped := false, false
	var quote byte
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		switch {
		case escaped:
			word.WriteByte(c)
			escaped = false
		case c == '\n' && quote == 0:
			i = len(rest)
			continue
		case c == '\\':
			escaped, inWord = true, true
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			word.WriteByte(c)
		case c == '"' || c == '\'':
			quote, inWord = c, true
		case c == '#':
			i = len(rest)
			continue
		case c < 0x80 && unicode.IsSpace(rune(c)):
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	return words
}

func TestSbatchWords(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{"#SBATCH --a=b", []string{"--a=b"}},
		{"#SBATCH --a=b --c", []string{"--a=b", "--c"}},
		{`#SBATCH --a="b c"`, []string{"--a=b c"}},
		{`#SBATCH --a=b\ c`, []string{"--a=b c"}},
		{"#SBATCH --a=b#c", []string{"--a=b"}},
		{"#SBATCH --a=b\r", []string{"--a=b"}},
		{"# SBATCH --a=b", nil},
	}
	for _, tt := range tests {
		if got := sbatchWords(tt.line); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("sbatchWords(%q) = %q; want %q", tt.line, got, tt.want)
		}
	}
}

// sbatchHeader returns the #SBATCH lines at the head of a script, as sbatch
// reads them: up to the first line that is neither blank nor a comment.
func sbatchHeader(script string) []string {
	var lines []string
	for _, line := range strings.Split(script, "\n")[1:] {
		if strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "#") {
			break
		}
		if strings.HasPrefix(line, "#SBATCH") {
			lines = append(lines, line)
		}
	}
	return lines
}

// FuzzParseFlags checks that every flag ParseFlags accepts becomes exactly one
// #SBATCH line of the rendered script, read by sbatch as exactly that flag.
func FuzzParseFlags(f *testing.F) {
	for _, s := range []string{
		"--partition=gpu\n--exclusive",
		"--a=b c", "--a=b#c", "--a='b'", "--a=b\\", "--a=b\r--c",
		"--out=x", "-p x", "--mem=1G\n\n --time=10 ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, annotation string) {
		flags, err := ParseFlags(annotation)
		if err != nil {
			return
		}
		job := testJob()
		job.Flags = flags
		script, err := Script(job, ScriptOptions{JobDir: "/data/ns-uid", Runtime: RuntimeApptainer})
		if err != nil {
			t.Fatalf("Script refused flags ParseFlags accepted (%q): %v", flags, err)
		}
		header := sbatchHeader(string(script))
		const fixed = 5 // --job-name, --output, --error, --chdir, --comment
		if len(header) != fixed+len(flags) {
			t.Fatalf("got %d #SBATCH lines for %d flags; want %d:\n%s", len(header), len(flags), fixed+len(flags), strings.Join(header, "\n"))
		}
		for i, flag := range flags {
			line := header[fixed+i]
			if words := sbatchWords(line); len(words) != 1 || words[0] != flag {
				t.Fatalf("sbatch reads %q as %q; want [%q]", line, words, flag)
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
		if words := sbatchWords("#SBATCH " + flag + "\n"); len(words) != 1 || words[0] != flag {
			t.Fatalf("sbatch reads %q as %q", flag, words)
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
		for _, r := range reservedFlags {
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
