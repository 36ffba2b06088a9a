// Command images writes the container images of sluice as OCI image
// archives (internal/ociimage, on go-containerregistry), without a container
// engine or a registry: it builds the binaries with go build and lays them
// out on no base image.
//
//	go run ./hack/tools/images [-out bin/images] [-images sluice-tunnel,sluice-vk,pause]
//	    [-coredns PATH] [-version V] [-revision R] [-source URL] [-arch GOARCH]
//	    [-push REGISTRY/PREFIX [-push-ca FILE]]
//	go run ./hack/tools/images -release [-out bin/release] [-archs amd64,arm64]
//	    [-helm PATH] [-version V] [-push REGISTRY/PREFIX [-push-ca FILE]]
//
// Images (see images.go): sluice-tunnel and sluice-vk (with sluice-relay
// beside it), and for the rig pause and, given -coredns, coredns. Each is
// written to OUT/<image>.tar; OUT/images.txt lists "NAME DIGEST FILE", which
// is also printed. Import one with `ctr -n k8s.io images import FILE`.
//
// -release writes a release instead (release.go): sluice-vk and
// sluice-tunnel each as one OCI index of -archs (an OCI layout directory
// OUT/<image>/ for `crane push`, and its tar OUT/<image>.tar for skopeo's
// oci-archive: and ctr import), an SPDX SBOM per image from the binaries'
// Go build information, the chart packaged with -helm, and SHA256SUMS.
//
// -push pushes what is built to REGISTRY/PREFIX/<image>:<tag> with
// go-containerregistry, with the credentials of $DOCKER_CONFIG/config.json
// (`crane auth login`), TLS verified against the system's CAs and -push-ca.
// The DIGEST printed for a pushed image is the registry's manifest, the one
// to pull by (the chart's image.digest and gateway.image.digest).
//
// The same source gives the same digests: binaries are built with
// CGO_ENABLED=0 -trimpath -buildvcs=false -ldflags "-s -w -buildid=" and
// the version stamped into internal/version; every file and the image are
// dated SOURCE_DATE_EPOCH, else the commit's time.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
)

// isSet reports whether the flag name was given.
func isSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func main() {
	var o options
	var names string
	flag.StringVar(&o.out, "out", "bin/images", "the directory the archives are written to")
	flag.StringVar(&names, "images", "sluice-tunnel,sluice-vk,pause", "the images to build, comma-separated; coredns too when -coredns is given")
	flag.StringVar(&o.coredns, "coredns", "", "the CoreDNS binary to make the coredns image of (hack/tools/build.sh coredns)")
	flag.StringVar(&o.version, "version", "", "the version stamped into the binaries and labels; if empty, the git tag of HEAD, else v0.0.0-dev+<revision>[.dirty]")
	flag.StringVar(&o.revision, "revision", "", "the revision label; if empty, git's HEAD")
	flag.StringVar(&o.source, "source", defaultSource, "the source label")
	flag.StringVar(&o.arch, "arch", runtime.GOARCH, "the architecture to build for (GOARCH)")
	flag.BoolVar(&o.release, "release", false, "write a release: an OCI index per image of -archs, SBOMs, the chart (-helm), SHA256SUMS")
	archs := flag.String("archs", "amd64,arm64", "with -release, the architectures of each index, comma-separated")
	flag.StringVar(&o.helm, "helm", "", "with -release, the helm that packages the chart (hack/tools/build.sh helm); if empty, no chart")
	flag.StringVar(&o.push, "push", "", "push the images to this registry prefix (host[:port]/path)")
	flag.StringVar(&o.pushCA, "push-ca", "", "a PEM file of CAs the registry's certificate may be signed by, beside the system's")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "images: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	o.images = strings.Split(names, ",")
	o.archs = strings.Split(*archs, ",")
	if o.release && !isSet("images") {
		o.images = releaseImages
	}
	if o.coredns != "" && !strings.Contains(","+names+",", ",coredns,") {
		o.images = append(o.images, "coredns")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	built, err := build(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
	for _, b := range built {
		fmt.Println(b)
	}
}
