package main

import (
	"io/fs"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/ociimage"
	"github.com/sluice-hpc/sluice/internal/relaybin"
	"github.com/sluice-hpc/sluice/internal/version"
)

// The user every image runs as: distroless's nonroot.
const (
	nonrootUID = 65532
	nonrootIDs = "65532:65532"
)

// Image names. The rig's images are local: containerd takes them from its
// store, never from a registry.
const (
	vkRepository      = "ghcr.io/sluice-hpc/sluice-vk"
	pauseImageName    = "localhost/sluice-rig/pause:v1"
	corednsRepository = "localhost/sluice-rig/coredns"
)

// binary is one Go program an image holds.
type binary struct {
	pkg  string // as go build names it, such as ./cmd/sluice-tunnel
	path string // in the image
	// arch is the GOARCH it is built for; if empty, the image's.
	arch string
}

// spec describes one image.
type spec struct {
	name     string // the archive's file name, without .tar
	binaries []binary
	// ref returns the image's reference for stamp s.
	ref func(s stamp) string
	// configure sets what is particular to the image: entrypoint, ports.
	configure func(img *ociimage.Image)
}

// nonrootFiles are the files that give uid and gid 65532 a name (tools
// show "nonroot"), its home, and /tmp. Nothing else: no shell, no package
// database, no CA certificates (sluice-tunnel speaks SSH with pinned host
// keys; sluice-vk reaches the API server with the cluster's CA).
func nonrootFiles() []ociimage.File {
	return []ociimage.File{
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
			"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n")},
		{Path: "/home/nonroot", Dir: true, Mode: 0o700, UID: nonrootUID, GID: nonrootUID},
		{Path: "/tmp", Dir: true, Mode: 0o777 | fs.ModeSticky},
	}
}

// ports returns the set of exposed ports "PORT/tcp" or "PORT/udp".
func ports(p ...string) map[string]struct{} {
	set := map[string]struct{}{}
	for _, x := range p {
		set[x] = struct{}{}
	}
	return set
}

// vkBinaries are sluice-vk and the relays of every site architecture.
func vkBinaries() []binary {
	bins := []binary{{pkg: "./cmd/sluice-vk", path: "/usr/local/bin/sluice-vk"}}
	for _, a := range relaybin.Archs {
		bins = append(bins, binary{pkg: "./cmd/sluice-relay", path: "/usr/local/bin/" + relaybin.File(a), arch: a})
	}
	return bins
}

// specs are the images this program builds, by name.
var specs = map[string]spec{
	"sluice-tunnel": {
		name:     "sluice-tunnel",
		binaries: []binary{{pkg: "./cmd/sluice-tunnel", path: "/usr/local/bin/sluice-tunnel"}},
		ref:      func(s stamp) string { return config.TunnelImageRepository + ":" + version.ImageTag(s.version) },
		configure: func(img *ociimage.Image) {
			img.Config.Entrypoint = []string{"/usr/local/bin/sluice-tunnel"}
			// The metrics ports of the ssh-forward and ssh-reverse containers.
			img.Config.ExposedPorts = ports("9464/tcp", "9465/tcp")
		},
	},
	"sluice-vk": {
		name: "sluice-vk",
		// sluice-vk places on the site the sluice-relay beside its
		// executable built for the site's machine (relaybin.Find): one per
		// site architecture, whatever the image's own.
		binaries: vkBinaries(),
		ref:      func(s stamp) string { return vkRepository + ":" + version.ImageTag(s.version) },
		configure: func(img *ociimage.Image) {
			img.Config.Entrypoint = []string{"/usr/local/bin/sluice-vk"}
		},
	},
	"pause": {
		name:     "pause",
		binaries: []binary{{pkg: "./hack/tools/pause", path: "/pause"}},
		ref:      func(stamp) string { return pauseImageName },
		configure: func(img *ociimage.Image) {
			img.Config.Entrypoint = []string{"/pause"}
		},
	},
}
