package doctor

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/site"
)

// commandTimeout bounds one command on the login node.
const commandTimeout = 30 * time.Second

// slurmCommands are the Slurm commands sluice runs on the login node.
var slurmCommands = []string{"sbatch", "squeue", "scancel", "sacct", "srun"}

// slurmVersion matches the first line of `sbatch --version`: "slurm
// 22.05.8", "slurm-wlm 22.05.8".
var slurmVersion = regexp.MustCompile(`^slurm(?:-wlm)? ([0-9]{1,4}\.[0-9]{1,4}(?:\.[0-9]{1,6})?[A-Za-z0-9.+~-]{0,32})$`)

// cmdResult is the output of one command, or its error.
type cmdResult struct {
	name string
	out  []byte
	err  error
}

func run(ctx context.Context, r site.Runner, args ...string) cmdResult {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	out, err := r.Run(ctx, nil, args...)
	return cmdResult{name: args[0], out: out, err: err}
}

// slurmCheck asks each Slurm command for its version.
func slurmCheck(ctx context.Context, r site.Runner, c *config.Config) Check {
	results := make([]cmdResult, len(slurmCommands))
	for i, name := range slurmCommands {
		results[i] = run(ctx, r, name, "--version")
	}
	return decideSlurm(results, c.Network.SSH.Reverse.NodeExec == "srun")
}

// decideSlurm decides the slurm line: every command present and of one
// version. sbatch, squeue and scancel are needed by every job; sacct tells
// how finished jobs ended (without it sluice reads the job's own files);
// srun carries the reverse tunnel under Reverse.NodeExec srun only.
func decideSlurm(results []cmdResult, needSrun bool) Check {
	c := Check{Name: "slurm", Status: OK}
	versions := map[string][]string{}
	var missing, optional []string
	for _, res := range results {
		first, _, _ := bytes.Cut(res.out, []byte("\n"))
		m := slurmVersion.FindSubmatch(bytes.TrimSpace(first))
		switch {
		case res.err == nil && m != nil:
			versions[string(m[1])] = append(versions[string(m[1])], res.name)
		case res.name == "sacct" || (res.name == "srun" && !needSrun):
			optional = append(optional, res.name+" ("+brief(res)+")")
		default:
			missing = append(missing, res.name+" ("+brief(res)+")")
		}
	}
	var found []string
	for v, names := range versions {
		found = append(found, strings.Join(names, ", ")+": Slurm "+v)
	}
	slices.Sort(found)
	c.Found = strings.Join(found, "; ")
	switch {
	case len(missing) > 0:
		c.Status = Fail
		c.Found = join("not usable: "+strings.Join(missing, ", "), c.Found)
		c.Fix = "put the Slurm commands in the PATH of non-interactive SSH sessions of the site account (sluice runs them without a login shell's profile)"
	case len(optional) > 0:
		c.Status = Warn
		c.Found = join("not usable: "+strings.Join(optional, ", "), c.Found)
		c.Fix = "sacct tells how jobs that left squeue ended; srun carries Reverse.NodeExec: srun: add them to the PATH if the site has them"
	case len(versions) > 1:
		c.Status = Warn
		c.Fix = "the commands come from different Slurm installations: fix the PATH of the site account"
	}
	return c
}

// brief is a short reason a command gave nothing usable.
func brief(res cmdResult) string {
	var ee *site.ExitError
	switch {
	case errors.As(res.err, &ee) && ee.Code == 127:
		return "not found"
	case res.err != nil:
		return res.err.Error()
	}
	first, _, _ := bytes.Cut(res.out, []byte("\n"))
	return fmt.Sprintf("unexpected version %q", clean(string(first)))
}

func join(a, b string) string {
	if b == "" {
		return a
	}
	return a + "; " + b
}

// dataRootCheck makes sure DataRoot can hold job directories: it makes the
// directory as Submit does and writes, reads back and removes a file in it.
func dataRootCheck(ctx context.Context, r site.Runner, root, user string) Check {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	file := path.Join(root, ".sluice-doctor-"+randomSuffix())
	err := r.MkdirAll(ctx, root, 0o700)
	if err == nil {
		err = r.WriteFile(ctx, file, []byte("sluice doctor\n"), 0o600)
	}
	if err == nil {
		var fi fs.FileInfo
		if fi, err = r.Stat(ctx, file); err == nil && fi.Size() != int64(len("sluice doctor\n")) {
			err = fmt.Errorf("wrote %d bytes, found %d", len("sluice doctor\n"), fi.Size())
		}
		if rmErr := r.RemoveAll(ctx, file); err == nil {
			err = rmErr
		}
	}
	return decideDataRoot(root, user, err)
}

func decideDataRoot(root, user string, err error) Check {
	if err != nil {
		return Check{Name: "data-root", Status: Fail, Found: "Site.DataRoot " + root + " is not writable by " + user + ": " + err.Error(),
			Fix: "make " + root + " a directory of " + user + "'s on the filesystem the compute nodes share (mkdir -p, mode 0700), or point Site.DataRoot at one"}
	}
	return Check{Name: "data-root", Status: OK, Found: "Site.DataRoot " + root + " is writable by " + user}
}

// spaceCheck runs df on DataRoot, or on its nearest parent that exists.
func spaceCheck(ctx context.Context, r site.Runner, root string) Check {
	dir := root
	for dir != "/" {
		sctx, cancel := context.WithTimeout(ctx, commandTimeout)
		_, err := r.Stat(sctx, dir)
		cancel()
		if err == nil {
			break
		}
		dir = path.Dir(dir)
	}
	res := run(ctx, r, "df", "-Pk", "--", dir)
	return decideSpace(dir, res)
}

// Thresholds of the data-root-space line.
const (
	minFreeKiB  = 1 << 20 // 1 GiB
	maxUsedPerc = 95
)

// decideSpace parses `df -Pk` (POSIX output: a header, then "filesystem
// blocks used available capacity% mount") and warns below minFreeKiB free
// or above maxUsedPerc used. df shows the filesystem, not a quota of the
// account, which sites report with their own tools.
func decideSpace(dir string, res cmdResult) Check {
	c := Check{Name: "data-root-space"}
	if res.err != nil {
		c.Status, c.Found = Warn, "df "+dir+": "+res.err.Error()
		c.Fix = "check the space left under Site.DataRoot by hand (df, quota, lfs quota)"
		return c
	}
	lines := strings.Split(strings.TrimSpace(string(res.out)), "\n")
	var f []string
	if len(lines) == 2 {
		f = strings.Fields(lines[1])
	}
	if len(f) < 6 {
		c.Status, c.Found = Warn, fmt.Sprintf("df %s: unexpected output %q", dir, clean(string(res.out)))
		c.Fix = "check the space left under Site.DataRoot by hand (df, quota, lfs quota)"
		return c
	}
	n := len(f)
	avail, err1 := strconv.ParseInt(f[n-3], 10, 64)
	used, err2 := strconv.Atoi(strings.TrimSuffix(f[n-2], "%"))
	if err1 != nil || err2 != nil || avail < 0 || used < 0 || used > 100 {
		c.Status, c.Found = Warn, fmt.Sprintf("df %s: unexpected output %q", dir, clean(string(res.out)))
		c.Fix = "check the space left under Site.DataRoot by hand (df, quota, lfs quota)"
		return c
	}
	c.Found = fmt.Sprintf("%s free on %s (%d%% used), seen by df on %s; a quota of the account is not shown",
		humanKiB(avail), f[n-1], used, dir)
	c.Status = OK
	if avail < minFreeKiB || used >= maxUsedPerc {
		c.Status = Warn
		c.Fix = "free space on the filesystem of Site.DataRoot: job files, logs and the relay binary go there"
	}
	return c
}

func humanKiB(k int64) string {
	switch {
	case k >= 1<<30:
		return fmt.Sprintf("%.1f TiB", float64(k)/(1<<30))
	case k >= 1<<20:
		return fmt.Sprintf("%.1f GiB", float64(k)/(1<<20))
	case k >= 1<<10:
		return fmt.Sprintf("%.1f MiB", float64(k)/(1<<10))
	}
	return fmt.Sprintf("%d KiB", k)
}

// emptySHA256 is the SHA-256 of no bytes.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// sha256Check runs sha256sum on the login node, where sluice checks the
// relay binary it places (slurm.Client.PlaceRelay).
func sha256Check(ctx context.Context, r site.Runner, c *config.Config) Check {
	return decideSHA256(run(ctx, r, "sha256sum", "/dev/null"), needsRelay(c))
}

func decideSHA256(res cmdResult, reverse bool) Check {
	c := Check{Name: "sha256sum"}
	if res.err == nil && bytes.HasPrefix(res.out, []byte(emptySHA256+" ")) {
		c.Status, c.Found = OK, "sha256sum works on the login node"
		return c
	}
	c.Status, c.Found = Warn, "sha256sum on the login node: "+brief(res)
	if reverse {
		c.Status = Fail
	}
	c.Fix = "put sha256sum (coreutils) in the PATH of the site account: sluice checks the relay binary of reverse tunnels with it"
	return c
}

// randomSuffix is 12 random hexadecimal digits.
func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
