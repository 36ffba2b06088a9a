package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/version"
)

const defaultSource = "https://github.com/sluice-hpc/sluice"

// stamp is what the images say of their source.
type stamp struct {
	version  string
	revision string
	created  time.Time
}

// sourceStamp fills in what o leaves empty from the checkout in dir: the
// version (the v* tag of HEAD, +dirty if the tree is modified, else
// v0.0.0-dev+<revision>[.dirty], as an unstamped binary built there reports
// it: version.FromBuildInfo), the revision (HEAD) and the date
// (SOURCE_DATE_EPOCH, else the commit's time, else the Unix epoch). Without
// git, the version is v0.0.0-dev and the revision "unknown".
func sourceStamp(ctx context.Context, dir string, o options) (stamp, error) {
	s := stamp{version: o.version, revision: o.revision, created: time.Unix(0, 0).UTC()}
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	head, headErr := git("rev-parse", "HEAD")
	if s.revision == "" {
		s.revision = "unknown"
		if headErr == nil {
			s.revision = head
		}
	}
	if s.version == "" {
		s.version = version.Dev
		st, err := git("status", "--porcelain")
		dirty := err == nil && st != ""
		if tag, err := git("describe", "--tags", "--exact-match", "--match", "v*", "HEAD"); err == nil && tag != "" {
			s.version = tag
			if dirty {
				s.version += "+dirty"
			}
		} else if headErr == nil {
			s.version += "+" + head[:min(12, len(head))]
			if dirty {
				s.version += ".dirty"
			}
		}
	}
	if e := os.Getenv("SOURCE_DATE_EPOCH"); e != "" {
		sec, err := strconv.ParseInt(e, 10, 64)
		if err != nil {
			return stamp{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: not a number of seconds", e)
		}
		s.created = time.Unix(sec, 0).UTC()
	} else if ct, err := git("log", "-1", "--format=%ct", "HEAD"); err == nil {
		if sec, err := strconv.ParseInt(ct, 10, 64); err == nil {
			s.created = time.Unix(sec, 0).UTC()
		}
	}
	return s, nil
}

// labels returns the OCI labels of an image titled title.
func (s stamp) labels(title, source, ver string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    title,
		"org.opencontainers.image.version":  ver,
		"org.opencontainers.image.revision": s.revision,
		"org.opencontainers.image.source":   source,
		"org.opencontainers.image.created":  s.created.Format(time.RFC3339),
	}
}
