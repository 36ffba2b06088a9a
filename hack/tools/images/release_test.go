package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// helmBinary is the helm hack/tools/build.sh builds from its Go module (at
// once when it is there).
func helmBinary(t *testing.T, ctx context.Context) string {
	t.Helper()
	root, err := moduleRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, filepath.Join(root, "hack", "tools", "build.sh"), "helm").Output()
	if err != nil {
		t.Fatalf("hack/tools/build.sh helm: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestRelease writes a release of sluice-tunnel for amd64 and arm64 twice,
// the second time pushing it to a registry over TLS, and checks that both
// are the same bytes (SHA256SUMS, which covers the index's tar, the SBOM
// and the chart), that the sums are true, that the layout holds one index
// of both platforms, that the SBOM names the image's digest and the
// modules linked, and that the registry serves the same index.
func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sluice-tunnel for two architectures")
	}
	// cold, on a loaded 2-core machine, the arm64 builds alone take
	// minutes
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	t.Setenv("SOURCE_DATE_EPOCH", "1764806400")
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials: the test registry is open

	srv := httptest.NewTLSServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(srv.URL, "https://")

	helm := helmBinary(t, ctx)
	var sums [][]byte
	var out string
	var lines []string
	for i := range 2 {
		// the revision given: a commit made while the test runs would
		// otherwise change the label between the two releases
		o := options{out: t.TempDir(), images: []string{"sluice-tunnel"}, source: defaultSource,
			version: "v1.2.3-rc.1", revision: "0123456789abcdef0123456789abcdef01234567", release: true, archs: []string{"amd64", "arm64"}, helm: helm}
		if i == 1 {
			o.push, o.pushCA = host+"/sluice", ca
		}
		var err error
		if lines, err = build(ctx, o); err != nil {
			t.Fatal(err)
		}
		s, err := os.ReadFile(filepath.Join(o.out, sumsFile))
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, s)
		out = o.out
	}
	if !bytes.Equal(sums[0], sums[1]) {
		t.Errorf("two releases of one source differ:\n%s\n%s", sums[0], sums[1])
	}
	checkSums(t, out, sums[1], "sluice-1.2.3-rc.1.tgz", "sluice-tunnel.spdx.json", "sluice-tunnel.tar")

	f := strings.Fields(lines[0])
	if len(lines) != 1 || len(f) != 3 || f[0] != "ghcr.io/sluice-hpc/sluice-tunnel:v1.2.3-rc.1" {
		t.Fatalf("got %q; want one line for ghcr.io/sluice-hpc/sluice-tunnel:v1.2.3-rc.1", lines)
	}
	digest := f[1]
	top, err := layout.ImageIndexFromPath(filepath.Join(out, "sluice-tunnel"))
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 || tm.Manifests[0].Digest.String() != digest || !tm.Manifests[0].MediaType.IsIndex() {
		t.Fatalf("the layout holds %+v; want the index %s", tm.Manifests, digest)
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, m := range im.Manifests {
		platforms = append(platforms, m.Platform.String())
	}
	if strings.Join(platforms, " ") != "linux/amd64 linux/arm64" {
		t.Errorf("the index is for %q; want linux/amd64 linux/arm64", platforms)
	}

	checkSBOM(t, filepath.Join(out, "sluice-tunnel.spdx.json"), digest)

	ref, err := name.ParseReference(host + "/sluice/sluice-tunnel:v1.2.3-rc.1")
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.Index(ref, remote.WithTransport(srv.Client().Transport))
	if err != nil {
		t.Fatalf("the pushed index: %v", err)
	}
	if d, err := got.Digest(); err != nil || d.String() != digest {
		t.Errorf("the registry serves %v (%v); want %s", d, err, digest)
	}
}

// checkSums checks that sums lists exactly the files want of dir, each
// with its true SHA-256.
func checkSums(t *testing.T, dir string, sums []byte, want ...string) {
	t.Helper()
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(sums))
	for sc.Scan() {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		got, err := fileSHA256(filepath.Join(dir, file))
		if err != nil || got != sum {
			t.Errorf("%s: SHA256SUMS says %s; it is %s (%v)", file, sum, got, err)
		}
		names = append(names, file)
	}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("SHA256SUMS lists %q; want %q", names, want)
	}
}

// checkSBOM checks the SPDX document of the tunnel image with digest.
func checkSBOM(t *testing.T, file, digest string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc spdxDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("the SBOM is not JSON: %v", err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.DataLicense != "CC0-1.0" || len(doc.DocumentDescribes) != 1 ||
		!strings.HasSuffix(doc.DocumentNamespace, "/"+digest) || doc.CreationInfo.Created != "2025-12-04T00:00:00Z" {
		t.Errorf("the SBOM's header: %+v", doc)
	}
	pkgs := map[string]spdxPackage{}
	for _, p := range doc.Packages {
		if _, dup := pkgs[p.SPDXID]; dup {
			t.Errorf("package %s twice", p.SPDXID)
		}
		pkgs[p.SPDXID] = p
	}
	img := pkgs[doc.DocumentDescribes[0]]
	if len(img.Checksums) != 1 || "sha256:"+img.Checksums[0].Value != digest || img.PrimaryPurpose != "CONTAINER" {
		t.Errorf("the image package %+v; want the index's digest %s", img, digest)
	}
	var binaries, crypto, stdlib int
	for _, p := range doc.Packages {
		switch {
		case p.Name == "/usr/local/bin/sluice-tunnel":
			binaries++
		case p.Name == "golang.org/x/crypto" && p.VersionInfo != "" && strings.HasPrefix(p.Comment, "go.sum h1:"):
			crypto++
		case p.Name == "stdlib" && p.VersionInfo != "":
			stdlib++
		}
	}
	if binaries != 2 || crypto != 1 || stdlib != 1 {
		t.Errorf("the SBOM has %d tunnel binaries, %d x/crypto, %d stdlib; want 2 (one per platform), 1, 1", binaries, crypto, stdlib)
	}
	ids := map[string]bool{"SPDXRef-DOCUMENT": true}
	for id := range pkgs {
		ids[id] = true
	}
	for _, r := range doc.Relationships {
		if !ids[r.Element] || !ids[r.Related] {
			t.Errorf("relationship %+v names an unknown element", r)
		}
	}
}
