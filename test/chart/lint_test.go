package chart

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from helm template")

// cases are the values files of testdata/values, each rendered to
// testdata/golden/NAME.yaml.
var cases = []string{"default", "tenant", "ha"}

func TestLint(t *testing.T) {
	for _, name := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := runHelm(t, "lint", "--strict", chartDir, "--namespace", "sluice-system", "-f", values(name))
			if err != nil {
				t.Fatalf("helm lint: %v\n%s", err, out)
			}
		})
	}
}

func TestTemplateGolden(t *testing.T) {
	for _, name := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := template(t, "-f", values(name))
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "golden", name+".yaml")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./test/chart -run Golden -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("helm template -f %s differs from %s (-update rewrites it):\n%s", values(name), golden, diffLines(string(want), got))
			}
		})
	}
}

// diffLines returns the first lines where want and got differ.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)) && b.Len() < 2000; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("line " + strconv.Itoa(i+1) + ":\n  want " + wl + "\n  got  " + gl + "\n")
		}
	}
	return b.String()
}
