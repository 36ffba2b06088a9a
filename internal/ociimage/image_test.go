package ociimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func testImage() Image {
	return Image{
		Name: "example.test/sluice/thing:v1",
		Layers: [][]File{{
			{Path: "/usr/local/bin/thing", Mode: 0o755, Data: []byte("binary")},
			{Path: "/etc/passwd", Mode: 0o644, Data: []byte("nonroot:x:65532:65532::/home/nonroot:/sbin/nologin\n")},
			{Path: "/home/nonroot", Dir: true, Mode: 0o700, UID: 65532, GID: 65532},
			{Path: "/tmp", Dir: true, Mode: 0o777 | fs.ModeSticky},
		}},
		Config: v1.Config{
			User: "65532:65532", Entrypoint: []string{"/usr/local/bin/thing"},
			Labels:       map[string]string{"org.opencontainers.image.version": "v1", "b": "2", "a": "1"},
			ExposedPorts: map[string]struct{}{"9464/tcp": {}},
		},
		Created: time.Unix(1700000000, 0),
	}
}

// TestWriteRead writes an image and reads it back with go-containerregistry's
// layout reader, which checks every blob against its digest.
func TestWriteRead(t *testing.T) {
	var buf bytes.Buffer
	d, err := Write(&buf, testImage())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Unpack(bytes.NewReader(buf.Bytes()), t.TempDir())
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
		t.Fatalf("index holds %d manifests; want 1", len(im.Manifests))
	}
	desc := im.Manifests[0]
	if desc.Digest.String() != d || desc.MediaType != types.OCIManifestSchema1 {
		t.Errorf("index names manifest %s (%s); Write returned %s", desc.Digest, desc.MediaType, d)
	}
	if got := desc.Annotations[AnnotationContainerdName]; got != "example.test/sluice/thing:v1" {
		t.Errorf("got name %q", got)
	}
	if got := desc.Annotations[AnnotationRefName]; got != "v1" {
		t.Errorf("got ref name %q; want v1", got)
	}
	if desc.Platform == nil || desc.Platform.OS != "linux" {
		t.Errorf("got platform %v; want linux", desc.Platform)
	}
	img, err := idx.Image(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
		t.Errorf("got config %s, layers %v; want OCI media types", m.Config.MediaType, m.Layers)
	}
	if m.Annotations["org.opencontainers.image.version"] != "v1" || m.Annotations["a"] != "" {
		t.Errorf("got manifest annotations %v", m.Annotations)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || !cf.Created.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("got user %q created %v", cf.Config.User, cf.Created)
	}
	if _, ok := cf.Config.ExposedPorts["9464/tcp"]; !ok {
		t.Errorf("got exposed ports %v; want 9464/tcp", cf.Config.ExposedPorts)
	}
	if len(cf.History) != 1 || !cf.History[0].Created.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("got history %v", cf.History)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var names []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if !h.ModTime.Equal(time.Unix(1700000000, 0)) {
			t.Errorf("%s: mtime %v", h.Name, h.ModTime)
		}
		switch h.Name {
		case "home/nonroot/":
			if h.Uid != 65532 || h.Gid != 65532 || h.Mode != 0o700 {
				t.Errorf("home: uid %d gid %d mode %o", h.Uid, h.Gid, h.Mode)
			}
		case "tmp/":
			if h.Mode != 0o1777 {
				t.Errorf("tmp: mode %o; want 1777", h.Mode)
			}
		case "usr/local/bin/thing":
			if string(data) != "binary" || h.Mode != 0o755 || h.Uid != 0 {
				t.Errorf("thing: %q mode %o uid %d", data, h.Mode, h.Uid)
			}
		}
	}
	want := "etc/ etc/passwd home/ home/nonroot/ tmp/ usr/ usr/local/ usr/local/bin/ usr/local/bin/thing"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("got entries %s; want %s", got, want)
	}
}

// TestUnpackRefuses checks that Unpack writes nothing outside its directory.
func TestUnpackRefuses(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "../evil", Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Unpack(&buf, t.TempDir()); err == nil {
		t.Error("got no error for ../evil")
	}
}

func TestWriteReproducible(t *testing.T) {
	var a, b bytes.Buffer
	da, err := Write(&a, testImage())
	if err != nil {
		t.Fatal(err)
	}
	img := testImage()
	// The same files listed in another order.
	l := img.Layers[0]
	l[0], l[3] = l[3], l[0]
	db, err := Write(&b, img)
	if err != nil {
		t.Fatal(err)
	}
	if da != db || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("two writes differ: %s and %s", da, db)
	}
	img.Created = time.Unix(1700000001, 0)
	if dc, _ := Write(&b, img); dc == da {
		t.Errorf("another date gave the same digest %s", dc)
	}
}

func TestWriteRefuses(t *testing.T) {
	tests := map[string]func(*Image){
		"no name":          func(i *Image) { i.Name = "" },
		"no layers":        func(i *Image) { i.Layers = nil },
		"relative path":    func(i *Image) { i.Layers[0][0].Path = "usr/bin/x" },
		"unclean path":     func(i *Image) { i.Layers[0][0].Path = "/usr/../bin/x" },
		"twice":            func(i *Image) { i.Layers[0][1].Path = i.Layers[0][0].Path },
		"file as parent":   func(i *Image) { i.Layers[0][1].Path = "/usr/local/bin/thing/x" },
		"directory w/data": func(i *Image) { i.Layers[0][2].Data = []byte("x") },
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			img := testImage()
			mutate(&img)
			if _, err := Write(&bytes.Buffer{}, img); err == nil {
				t.Error("got no error")
			}
		})
	}
}

// TestIndexLayout builds an index of one image for two platforms twice,
// writes each as a layout, and reads one back as crane push would: one
// entry, an index, named, with a manifest per platform in order.
func TestIndexLayout(t *testing.T) {
	var digests []string
	var dir string
	for range 2 {
		var imgs []Image
		for _, arch := range []string{"amd64", "arm64"} {
			img := testImage()
			img.Architecture = arch
			img.Created = time.Unix(1700000000, 0)
			imgs = append(imgs, img)
		}
		idx, err := Index(imgs)
		if err != nil {
			t.Fatal(err)
		}
		dir = t.TempDir()
		if err := WriteIndexLayout(dir, imgs[0].Name, idx); err != nil {
			t.Fatal(err)
		}
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d.String())
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds gave indexes %s and %s", digests[0], digests[1])
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 || !tm.Manifests[0].MediaType.IsIndex() || tm.Manifests[0].Digest.String() != digests[0] {
		t.Fatalf("the layout's index.json holds %+v; want the one index %s", tm.Manifests, digests[0])
	}
	if got := tm.Manifests[0].Annotations[AnnotationContainerdName]; got != "example.test/sluice/thing:v1" {
		t.Errorf("the index is named %q; want example.test/sluice/thing:v1", got)
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex || len(im.Manifests) != 2 {
		t.Fatalf("got an index %s of %d manifests; want an OCI index of 2", im.MediaType, len(im.Manifests))
	}
	for i, arch := range []string{"amd64", "arm64"} {
		m := im.Manifests[i]
		if m.Platform == nil || m.Platform.OS != "linux" || m.Platform.Architecture != arch {
			t.Errorf("manifest %d is for %+v; want linux/%s", i, m.Platform, arch)
		}
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil || cf.Architecture != arch {
			t.Errorf("manifest %d's config says %v (%v); want %s", i, cf, err, arch)
		}
	}
	if _, err := Index(nil); err == nil {
		t.Error("an index of no images: no error")
	}
	other := testImage()
	other.Name = "example.test/other:v1"
	if _, err := Index([]Image{testImage(), other}); err == nil {
		t.Error("an index of two names: no error")
	}
}
