package sbatchtest

import (
	"reflect"
	"testing"
)

func TestWords(t *testing.T) {
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
		if got := Words(tt.line); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Words(%q) = %q; want %q", tt.line, got, tt.want)
		}
	}
}
