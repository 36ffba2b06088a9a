package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/ociimage"
	"github.com/sluice-hpc/sluice/internal/relaybin"
)

// shells are the names of the programs no image may hold.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "ash": true, "zsh": true,
	"ksh": true, "mksh": true, "csh": true, "tcsh": true, "fish": true, "busybox": true}

// TestTunnelImage builds the sluice-tunnel image twice, into two
// directories, and checks that both are the same image and that it is the
// one shipped: nonroot, no shell, labelled with the version the binary
// prints.
func TestTunnelImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sluice-tunnel twice")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var digests, archives []string
	for range 2 {
		o := options{out: t.TempDir(), images: []string{"sluice-tunnel"}, source: defaultSource, arch: runtime.GOARCH}
		lines, err := build(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) != 1 {
			t.Fatalf("got %d images: %q; want 1", len(lines), lines)
		}
		f := strings.Fields(lines[0])
		if len(f) != 3 || f[2] != filepath.Join(o.out, "sluice-tunnel.tar") {
			t.Fatalf("got line %q; want NAME DIGEST %s/sluice-tunnel.tar", lines[0], o.out)
		}
		list, err := os.ReadFile(filepath.Join(o.out, "images.txt"))
		if err != nil || string(list) != lines[0]+"\n" {
			t.Errorf("images.txt holds %q (%v); want %q", list, err, lines[0]+"\n")
		}
		digests = append(digests, f[1])
		archives = append(archives, f[2])
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds of one source gave %s and %s", digests[0], digests[1])
	}
	a0, err := os.ReadFile(archives[0])
	if err != nil {
		t.Fatal(err)
	}
	a1, err := os.ReadFile(archives[1])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a0, a1) {
		t.Errorf("the two archives differ")
	}

	p, err := ociimage.Unpack(bytes.NewReader(a0), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("the archive holds %d manifests; want 1", len(im.Manifests))
	}
	if got := im.Manifests[0].Digest.String(); got != digests[0] {
		t.Errorf("the archive's manifest is %s; the build printed %s", got, digests[0])
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != "65532:65532" {
		t.Errorf("got User %q; want 65532:65532", c.User)
	}
	if strings.Join(c.Entrypoint, " ") != "/usr/local/bin/sluice-tunnel" {
		t.Errorf("got Entrypoint %q; want [/usr/local/bin/sluice-tunnel]", c.Entrypoint)
	}
	for _, l := range []string{"version", "revision", "source"} {
		if c.Labels["org.opencontainers.image."+l] == "" {
			t.Errorf("label org.opencontainers.image.%s is missing: %v", l, c.Labels)
		}
	}
	name := im.Manifests[0].Annotations[ociimage.AnnotationContainerdName]
	if want := "ghcr.io/sluice-hpc/sluice-tunnel:"; !strings.HasPrefix(name, want) || strings.HasSuffix(name, ":latest") {
		t.Errorf("got image name %q; want %s<version>", name, want)
	}

	created := cf.Created.Time
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var binary []byte
	for _, layer := range layers {
		rc, err := layer.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if shells[path.Base(strings.TrimSuffix(h.Name, "/"))] {
				t.Errorf("the image holds a shell: /%s", h.Name)
			}
			if !h.ModTime.Equal(created) {
				t.Errorf("/%s is dated %v; want %v", h.Name, h.ModTime, created)
			}
			if (h.Uid != 0 || h.Gid != 0) && (h.Uid != 65532 || h.Gid != 65532) {
				t.Errorf("/%s is owned by %d:%d; want 0:0 or 65532:65532", h.Name, h.Uid, h.Gid)
			}
			if h.Name == "usr/local/bin/sluice-tunnel" {
				if binary, err = io.ReadAll(tr); err != nil {
					t.Fatal(err)
				}
			}
		}
		rc.Close()
	}
	if binary == nil {
		t.Fatal("the image has no /usr/local/bin/sluice-tunnel")
	}
	bin := filepath.Join(t.TempDir(), "sluice-tunnel")
	if err := os.WriteFile(bin, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		t.Fatalf("sluice-tunnel --version: %v", err)
	}
	// "sluice-tunnel VERSION (GOVERSION GOOS/GOARCH)"
	f := strings.Fields(string(out))
	if len(f) < 2 || f[1] != c.Labels["org.opencontainers.image.version"] {
		t.Errorf("sluice-tunnel --version printed %q; the version label is %q", out, c.Labels["org.opencontainers.image.version"])
	}
	if !strings.HasSuffix(name, ":"+strings.ReplaceAll(f[1], "+", "_")) {
		t.Errorf("image %s is not tagged with the version %s", name, f[1])
	}
}

func TestUnknownImage(t *testing.T) {
	o := options{out: t.TempDir(), images: []string{"nginx"}, source: defaultSource, arch: runtime.GOARCH, version: "v1.0.0"}
	if _, err := build(context.Background(), o); err == nil || !strings.Contains(err.Error(), `unknown image "nginx"`) {
		t.Errorf("got %v; want unknown image", err)
	}
}

func TestBadVersion(t *testing.T) {
	o := options{out: t.TempDir(), images: []string{"sluice-tunnel"}, source: defaultSource, arch: runtime.GOARCH, version: "v1 -X evil=1"}
	if _, err := build(context.Background(), o); err == nil || !strings.Contains(err.Error(), "version") {
		t.Errorf("got %v; want the version refused", err)
	}
}

// TestVKRelayBeside checks that sluice-vk's image holds a sluice-relay for
// every site architecture beside sluice-vk, named as relaybin.Find looks
// for it, each built for its architecture whatever the image's.
func TestVKRelayBeside(t *testing.T) {
	sp := specs["sluice-vk"]
	var vk string
	relays := map[string]string{}
	for _, b := range sp.binaries {
		switch b.pkg {
		case "./cmd/sluice-vk":
			vk = b.path
		case "./cmd/sluice-relay":
			relays[b.arch] = b.path
		}
	}
	if vk == "" {
		t.Fatal("no sluice-vk in its image")
	}
	for _, a := range relaybin.Archs {
		p := relays[a]
		if path.Dir(p) != path.Dir(vk) || path.Base(p) != relaybin.File(a) {
			t.Errorf("the %s relay is at %q; want %s beside %s", a, p, relaybin.File(a), vk)
		}
	}
	if len(relays) != len(relaybin.Archs) || len(sp.binaries) != 1+len(relaybin.Archs) {
		t.Errorf("got binaries %+v; want sluice-vk and a relay per %v", sp.binaries, relaybin.Archs)
	}
}
