// Package version is the release of the sluice binaries, one for all of
// them, and the image tag that names it.
//
// A release build stamps it:
//
//	go build -ldflags "-X github.com/sluice-hpc/sluice/internal/version.version=v1.2.3" ./cmd/...
//
// as `make images` does (hack/tools/images). Unstamped, it is the version the
// Go toolchain records: the module version (go install …@v1.2.3, or the
// pseudo-version go build derives from the checkout's commit), else
// v0.0.0-dev+<revision>, else v0.0.0-dev.
package version

import (
	"regexp"
	"runtime/debug"
)

// version is set with -ldflags -X; see the package comment.
var version string

// Dev is the version of a build that records neither a module version nor
// a revision (go test, go run).
const Dev = "v0.0.0-dev"

// String returns the version: the stamped one, else the one the build
// information gives.
func String() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Dev
	}
	return FromBuildInfo(bi)
}

// Tag returns the version as an OCI image tag; see ImageTag.
func Tag() string {
	return ImageTag(String())
}

// FromBuildInfo returns the version an unstamped binary with build
// information bi reports, the one hack/tools/images stamps for the same
// source:
//   - a release the toolchain recorded (go install …@v1.2.3, or go build
//     in a checkout whose HEAD is tagged v1.2.3, then v1.2.3+dirty if the
//     tree is modified);
//   - else, built in a checkout, v0.0.0-dev+<first 12 digits of the
//     revision>[.dirty] (rather than the pseudo-version go build derives);
//   - else the module version recorded (a pseudo-version of go install
//     …@<commit>), else Dev.
func FromBuildInfo(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "(devel)" {
		v = ""
	}
	if v != "" && !pseudoVersion.MatchString(v) {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		if v != "" {
			return v
		}
		return Dev
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += ".dirty"
	}
	return Dev + "+" + rev
}

// pseudoVersion matches the Go toolchain's pseudo-versions
// (v0.0.0-20261203105400-46e1f09abcde, v1.2.4-0.20261203105400-46e1f09abcde).
var pseudoVersion = regexp.MustCompile(`[-.](0\.)?\d{14}-[0-9a-f]{12}(\+.*)?$`)

// ImageTag maps version v to a valid OCI tag ([A-Za-z0-9_][A-Za-z0-9._-],
// at most 128 characters): '+', which semantic versions use for build
// metadata and tags do not allow, becomes '_' (as Helm does); any other
// character a tag does not allow becomes '-'. An empty v gives Dev.
func ImageTag(v string) string {
	if v == "" {
		v = Dev
	}
	b := []byte(v)
	for i, c := range b {
		switch {
		case c == '+':
			b[i] = '_'
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
		case (c == '.' || c == '-') && i > 0:
		default:
			b[i] = '-'
			if i == 0 {
				b[i] = '_'
			}
		}
	}
	if len(b) > 128 {
		b = b[:128]
	}
	return string(b)
}
