package sbatchtest

import (
	"embed"
	"testing"
)

// Listing is what the sbatch of a Slurm release lists of itself, as
// testdata holds it (testdata/README.md says where each was captured).
type Listing struct {
	Version, Help, Usage string
}

//go:embed testdata/*.help testdata/*.usage
var listings embed.FS

// ReadListing reads the listing of version ("22.05.8", "24.11.5").
func ReadListing(t testing.TB, version string) Listing {
	t.Helper()
	help, err := listings.ReadFile("testdata/" + version + ".help")
	if err != nil {
		t.Fatal(err)
	}
	usage, err := listings.ReadFile("testdata/" + version + ".usage")
	if err != nil {
		t.Fatal(err)
	}
	return Listing{Version: version, Help: string(help), Usage: string(usage)}
}
