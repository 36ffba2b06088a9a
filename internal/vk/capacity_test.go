package vk

import (
	"context"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/sluice-hpc/sluice/internal/slurm"
)

// A configuration that sets every amount reads nothing from the site; one
// that leaves any to the site, or names an extended resource, reads it with
// sinfo on the site's runner.
func TestSiteCapacity(t *testing.T) {
	c := &slurm.Client{Site: &site.Local{}, DataRoot: "/nonexistent"}
	all := config.Node{CPU: "8", Memory: "1Gi", GPUs: "0"}
	if siteCapacity(all, c) != nil {
		t.Error("all amounts set: the site is still read")
	}
	for _, n := range []config.Node{
		{CPU: "8", Memory: "1Gi"},
		{CPU: "8", Memory: "1Gi", GPUs: "0", ExtendedResources: map[string]string{"shard": "example.com/shard"}},
	} {
		read := siteCapacity(n, c)
		if read == nil {
			t.Fatalf("%+v: the site is not read", n)
		}
		t.Setenv("PATH", t.TempDir()) // no sinfo
		if _, err := read(context.Background()); err == nil || !strings.Contains(err.Error(), "sinfo") {
			t.Errorf("%+v: err = %v; want sinfo's failure", n, err)
		}
	}
}
