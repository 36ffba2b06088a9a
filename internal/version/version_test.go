package version

import (
	"regexp"
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"module version", debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"tag, modified", debug.BuildInfo{Main: debug.Module{Version: "v1.2.3+dirty"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "46e1f09abcdef0123456789"}, {Key: "vcs.modified", Value: "true"}}}, "v1.2.3+dirty"},
		{"pseudo-version of a checkout", debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261203105400-46e1f09abcde+dirty"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "46e1f09abcdef0123456789"}, {Key: "vcs.modified", Value: "true"}}}, "v0.0.0-dev+46e1f09abcde.dirty"},
		{"pseudo-version after a tag", debug.BuildInfo{Main: debug.Module{Version: "v1.2.4-0.20261203105400-46e1f09abcde"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "46e1f09abcdef0123456789"}}}, "v0.0.0-dev+46e1f09abcde"},
		{"pseudo-version installed", debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261203105400-46e1f09abcde"}}, "v0.0.0-20261203105400-46e1f09abcde"},
		{"revision", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "46e1f09abcdef0123456789"}, {Key: "vcs.modified", Value: "false"}}}, "v0.0.0-dev+46e1f09abcde"},
		{"dirty revision", debug.BuildInfo{Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "46e1f09"}, {Key: "vcs.modified", Value: "true"}}}, "v0.0.0-dev+46e1f09.dirty"},
		{"nothing", debug.BuildInfo{}, Dev},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FromBuildInfo(&tt.bi); got != tt.want {
				t.Errorf("got %q; want %q", got, tt.want)
			}
		})
	}
}

var tagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

func TestImageTag(t *testing.T) {
	tests := map[string]string{
		"v1.2.3":                  "v1.2.3",
		"v0.0.0-dev+46e1f09abcde": "v0.0.0-dev_46e1f09abcde",
		"v0.0.0-20261203105400-46e1f09abcde+dirty": "v0.0.0-20261203105400-46e1f09abcde_dirty",
		"":               "v0.0.0-dev",
		".x/y:z":         "_x-y-z",
		"v1.0.0+build.1": "v1.0.0_build.1",
	}
	for in, want := range tests {
		got := ImageTag(in)
		if got != want {
			t.Errorf("ImageTag(%q) = %q; want %q", in, got, want)
		}
		if !tagRE.MatchString(got) {
			t.Errorf("ImageTag(%q) = %q is not a valid OCI tag", in, got)
		}
	}
	long := make([]byte, 300)
	for i := range long {
		long[i] = 'a'
	}
	if got := ImageTag(string(long)); len(got) != 128 || !tagRE.MatchString(got) {
		t.Errorf("ImageTag of 300 characters has %d; want 128", len(got))
	}
}

func TestStringUnstamped(t *testing.T) {
	// go test records no VCS information: the development version.
	if got := String(); got != Dev && !tagRE.MatchString(ImageTag(got)) {
		t.Errorf("String() = %q", got)
	}
	if got := Tag(); !tagRE.MatchString(got) {
		t.Errorf("Tag() = %q is not a valid OCI tag", got)
	}
}
