package testrig

import (
	"path/filepath"
	"strings"
	"testing"
)

// site2Prefix marks the second site's keys in rig.env: RIG_SITE2_X is the
// second site's RIG_X.
const site2Prefix = "RIG_SITE2_"

// clusterKeys are the rig.env keys that are the same whichever site a test
// uses: the cluster side (Redis, the API server, the real node), the rig's
// dir, and the accounts, which have the same names, uids and keys on both
// sites. Every other RIG_ key describes the first site. A trailing * makes
// a prefix.
var clusterKeys = []string{
	"RIG_DIR", "RIG_USER", "RIG_USER_UID", "RIG_OTHER_USER", "RIG_KEY", "RIG_OTHER_KEY",
	"RIG_REDIS_*", "RIG_KUBE*", "RIG_K8S_*",
}

func isClusterKey(key string) bool {
	for _, k := range clusterKeys {
		if prefix, ok := strings.CutSuffix(k, "*"); key == k || ok && strings.HasPrefix(key, prefix) {
			return true
		}
	}
	return false
}

// Site2 is the rig as seen from its second site (Debian 13: Slurm 24.11,
// OpenSSH 10.0): the same keys as the first site's, so that a test runs
// unchanged against either. Its RIG_LOGIN_ADDR, RIG_KNOWN_HOSTS,
// RIG_DATA_ROOT… are the second site's; the cluster's keys (Redis, the API
// server, the users and their keys) are shared; the first site's own (its
// bastion, Kerberos realm) are absent. Paths are as the site sees them: see
// HostPath. OverrideNodeSSHD and OverrideLoginSSHD set options of the
// second site's sshds. Without a second site (SLUICE_RIG_SITE2=0), the test is skipped,
// or failed in CI.
func (r *Rig) Site2(t testing.TB) *Rig {
	t.Helper()
	if _, ok := r.Lookup(site2Prefix + "LOGIN_ADDR"); !ok {
		Unavailable(t, "the rig has no second site (run hack/rig/rig.sh up site2)")
	}
	vars := make(map[string]string)
	for k, v := range r.vars {
		if rest, ok := strings.CutPrefix(k, site2Prefix); ok {
			vars["RIG_"+rest] = v
		}
	}
	for k, v := range r.vars {
		if _, set := vars[k]; !set && isClusterKey(k) {
			vars[k] = v
		}
	}
	return &Rig{vars: vars, svcPrefix: "site2-"}
}

// HostPath is where a file the site names p is found from the host: the
// same path on the first site, whose nodes share the host's files, and
// under RIG_ROOT, the site's root, on the second.
func (r *Rig) HostPath(p string) string {
	if root, ok := r.Lookup("RIG_ROOT"); ok {
		return filepath.Join(root, p)
	}
	return p
}
