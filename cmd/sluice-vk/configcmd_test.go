package main

import (
	"bytes"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/jobscript"
)

// The printed configuration holds the plugin's keys under Site, which
// sluice-vk's start-up checks (jobscript.NewSiteOptions) accept, and notes.
func TestConfigImport(t *testing.T) {
	var out, errOut bytes.Buffer
	code := configCommand([]string{"import", "--from-interlink", "../../internal/config/testdata/interlink/flavors.yaml"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	s := out.String()
	for _, want := range []string{"# Fill in every value", "#   DefaultUID: not carried over", "  DefaultFlavor: default\n", "        - --gres=gpu:1\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("want %q in\n%s", want, s)
		}
	}
	var c config.Config
	if err := yaml.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatalf("the output is not YAML: %v", err)
	}
	o, err := jobscript.NewSiteOptions(c.Site)
	if err != nil {
		t.Fatalf("NewSiteOptions: %v", err)
	}
	if f := o.Flavors["gpu-nvidia"]; f.GPUs != 1 || f.CPUs != 8 {
		t.Errorf("got gpu-nvidia %+v", f)
	}
}

func TestConfigImportUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage: sluice-vk config import --from-interlink FILE"},
		{[]string{"import"}, 2, "usage:"},
		{[]string{"import", "--from-interlink", "a", "b"}, 2, "usage:"},
		{[]string{"export"}, 2, "usage:"},
		{[]string{"import", "--from-interlink", "/nonexistent.yaml"}, 1, "no such file"},
		{[]string{"import", "--from-interlink", "configcmd.go"}, 1, "import interLink configuration"},
	} {
		var out, errOut bytes.Buffer
		if code := configCommand(tc.args, &out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%q: exit %d, %q; want %d, %q", tc.args, code, errOut.String(), tc.code, tc.want)
		}
	}
}
