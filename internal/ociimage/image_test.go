package ociimage

import (
	"bytes"
	"io/fs"
	"strings"
	"testing"
	"time"
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
		Config: Config{
			User: "65532:65532", Entrypoint: []string{"/usr/local/bin/thing"},
			Labels:       map[string]string{"org.opencontainers.image.version": "v1", "b": "2", "a": "1"},
			ExposedPorts: []string{"9464/tcp"},
		},
		Created: time.Unix(1700000000, 0),
	}
}

func TestWriteRead(t *testing.T) {
	var buf bytes.Buffer
	d, err := Write(&buf, testImage())
	if err != nil {
		t.Fatal(err)
	}
	a, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Index.Manifests[0].Digest; got != d {
		t.Errorf("index names manifest %s; Write returned %s", got, d)
	}
	if got := a.Index.Manifests[0].Annotations[AnnotationContainerdName]; got != "example.test/sluice/thing:v1" {
		t.Errorf("got name %q", got)
	}
	if got := a.Index.Manifests[0].Annotations[AnnotationRefName]; got != "v1" {
		t.Errorf("got ref name %q; want v1", got)
	}
	if a.Config.Config.User != "65532:65532" || a.Config.Created != "2023-11-14T22:13:20Z" {
		t.Errorf("got user %q created %q", a.Config.Config.User, a.Config.Created)
	}
	if _, ok := a.Config.Config.ExposedPortSet["9464/tcp"]; !ok {
		t.Errorf("got exposed ports %v; want 9464/tcp", a.Config.Config.ExposedPortSet)
	}
	if a.Manifest.Annotations["org.opencontainers.image.version"] != "v1" || a.Manifest.Annotations["a"] != "" {
		t.Errorf("got manifest annotations %v", a.Manifest.Annotations)
	}
	var names []string
	for _, e := range a.Layers[0] {
		names = append(names, e.Header.Name)
		if !e.Header.ModTime.Equal(time.Unix(1700000000, 0)) {
			t.Errorf("%s: mtime %v", e.Header.Name, e.Header.ModTime)
		}
		switch e.Header.Name {
		case "home/nonroot/":
			if e.Header.Uid != 65532 || e.Header.Gid != 65532 || e.Header.Mode != 0o700 {
				t.Errorf("home: uid %d gid %d mode %o", e.Header.Uid, e.Header.Gid, e.Header.Mode)
			}
		case "tmp/":
			if e.Header.Mode != 0o1777 {
				t.Errorf("tmp: mode %o; want 1777", e.Header.Mode)
			}
		case "usr/local/bin/thing":
			if string(e.Data) != "binary" || e.Header.Mode != 0o755 || e.Header.Uid != 0 {
				t.Errorf("thing: %q mode %o uid %d", e.Data, e.Header.Mode, e.Header.Uid)
			}
		}
	}
	want := "etc/ etc/passwd home/ home/nonroot/ tmp/ usr/ usr/local/ usr/local/bin/ usr/local/bin/thing"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("got entries %s; want %s", got, want)
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
