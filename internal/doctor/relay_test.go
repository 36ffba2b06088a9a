package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/relaybin"
)

// TestRelayCheck checks the relay line against a site whose uname -m is
// told by a fake runner, with the relays of a release laid out as the test
// binary (built for this machine) under their names.
func TestRelayCheck(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	own, err := relaybin.Arch(exe)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, relaybin.File(own)), data, 0o755); err != nil {
		t.Fatal(err)
	}
	machines := map[string]string{"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64le"}
	other := "ppc64le"
	if own == "ppc64le" {
		other = "amd64"
	}
	for _, tc := range []struct {
		name    string
		uname   *cmdResult
		reverse bool
		want    Status
		found   string
		fix     string
	}{
		{"fits", &cmdResult{out: []byte(machines[own] + "\n")}, true, OK, "sluice-vk places " + relaybin.File(own), ""},
		{"none fits, reverse on", &cmdResult{out: []byte(machines[other] + "\n")}, true, Fail,
			"this sluice-vk carries relays for " + own + " only", "GOARCH=" + other},
		{"none fits, reverse off", &cmdResult{out: []byte(machines[other] + "\n")}, false, Warn,
			"this sluice-vk carries relays for " + own + " only", "releases carry amd64, arm64, ppc64le"},
		{"unknown machine", &cmdResult{out: []byte("pdp11\n")}, true, Fail, `"pdp11" (uname -m) is not one sluice knows`, "GOARCH=<the site's architecture>"},
		{"no uname", nil, true, Warn, "uname -m on the login node", "put uname"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answers := map[string]cmdResult{}
			if tc.uname != nil {
				answers["uname -m"] = *tc.uname
			}
			c := &config.Config{}
			c.Network.SSH.Reverse.Enabled = tc.reverse
			d := &Doctor{Config: c, RelayDir: dir}
			got := d.relayCheck(context.Background(), &fakeRunner{answers: answers})
			if got.Name != "relay" || got.Status != tc.want || !strings.Contains(got.Found, tc.found) || !strings.Contains(got.Fix, tc.fix) {
				t.Errorf("got %+v; want %s, found saying %q, fix saying %q", got, tc.want, tc.found, tc.fix)
			}
		})
	}
}
