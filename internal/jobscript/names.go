package jobscript

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/sluice-hpc/sluice/internal/sitepath"
)

// The checks below guard every value that reaches a file name, a shell word
// or an #SBATCH line. The API server validates most of them already; a Job is
// a plain struct, so the script checks them again.

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	shellName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	uidPattern   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	// safePath is the character set of a job directory (see sitepath).
	safePath = sitepath.Chars
)

// reservedContainer is the container name whose files would be the job's own
// (job.exit, job.id).
const reservedContainer = "job"

func CheckDNSLabel(what, s string) error {
	if len(s) > 63 || !dnsLabel.MatchString(s) {
		return fmt.Errorf("%s %q is not a DNS label", what, s)
	}
	return nil
}

func CheckNamespace(s string) error { return CheckDNSLabel("namespace", s) }

func checkPodName(s string) error {
	if len(s) > 253 || !dnsSubdomain.MatchString(s) {
		return fmt.Errorf("pod name %q is not a DNS subdomain", s)
	}
	return nil
}

// CheckUID checks a pod UID by the rule of the job it names (CheckUID):
// a UID the script took and Submit refused would wait for ever.
// CheckUID reports a pod UID that may not name a job or a directory: lower
// case, at most 63 characters, no leading '-' (the API server's UIDs are
// lower-case UUIDs).
func CheckUID(uid string) error {
	if !uidPattern.MatchString(uid) {
		return fmt.Errorf("slurm: invalid pod uid %q", uid)
	}
	return nil
}

func CheckContainerName(s string) error {
	if err := CheckDNSLabel("container name", s); err != nil {
		return err
	}
	if s == reservedContainer {
		return fmt.Errorf("container name %q is reserved: its files would be the job's own", s)
	}
	return nil
}

// CheckJobDir checks the job directory handed to Script.
func CheckJobDir(dir string) error {
	if err := sitepath.Check(dir); err != nil {
		return fmt.Errorf("job directory %w", err)
	}
	return nil
}

// checkRelPath checks a path that must stay inside the job directory: relative,
// clean, without "..", and free of control characters.
func checkRelPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty path")
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("path %q is absolute", p)
	case hasControl(p):
		return fmt.Errorf("path %q holds a control character", p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return fmt.Errorf("path %q leaves its directory", p)
		}
	}
	if path.Clean(p) != p || p == "." {
		return fmt.Errorf("path %q is not clean", p)
	}
	return nil
}

// checkMountTarget checks a path inside a container: absolute, clean, and
// without the ':' and ',' that separate apptainer and ch-run binds.
func checkMountTarget(p string) error {
	switch {
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("path %q is not absolute", p)
	case strings.ContainsAny(p, ":,") || hasControl(p):
		return fmt.Errorf("path %q holds ':', ',' or a control character", p)
	case path.Clean(p) != p:
		return fmt.Errorf("path %q is not clean", p)
	}
	return nil
}

// checkWorkingDir checks a container's working directory.
func checkWorkingDir(p string) error {
	if !strings.HasPrefix(p, "/") || hasControl(p) {
		return fmt.Errorf("working directory %q is not an absolute path", p)
	}
	return nil
}

// checkEnvName checks that the batch script can set an environment variable:
// its env file is read by the shell, so the name must be a shell name.
func checkEnvName(s string) error {
	if !shellName.MatchString(s) {
		return fmt.Errorf("%q is not a shell variable name, so the batch script cannot set it", s)
	}
	return nil
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}
