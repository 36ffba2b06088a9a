package doctor

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/sluice-hpc/sluice/internal/sbatch"
	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/sluice-hpc/sluice/internal/slurm"
	"golang.org/x/crypto/ssh"
)

// maxSSHVersion bounds the output of `ssh -V` on the login node.
const maxSSHVersion = 512

// sbatchOptionsCheck learns the site's sbatch options as sluice-vk does at
// start (slurm.Client.LearnSbatch), keeping them under dataRoot for it, and
// says how many: a site whose options cannot be learned has its pods'
// flags checked against the built-in table of Slurm 22.05, which refuses
// the options of later releases.
func sbatchOptionsCheck(ctx context.Context, r site.Runner, dataRoot string, log *slog.Logger) Check {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	c := &slurm.Client{Site: r, DataRoot: dataRoot, Logger: log}
	t, err := c.LearnSbatch(ctx)
	return decideSbatchOptions(t, err)
}

func decideSbatchOptions(t *sbatch.Options, err error) Check {
	c := Check{Name: "sbatch-options"}
	if err != nil {
		c.Status, c.Found = Warn, clean(err.Error())+"; pods' flags are checked against the "+t.String()
		c.Fix = "let the site account run sbatch --version, --help and --usage on the login node; until then options newer than Slurm 22.05 are refused"
		return c
	}
	c.Status, c.Found = OK, "learned from the site: "+t.String()
	if len(t.Added) > 0 {
		c.Found += " (" + strings.Join(t.Added, ", ") + ")"
	}
	return c
}

// opensshCheck tells the OpenSSH of the login node: its sshd's banner and
// its client's version (ssh -V), which the site's own tools use. login is
// nil with local access.
func opensshCheck(ctx context.Context, r site.Runner, login *ssh.Client) Check {
	c := Check{Name: "openssh", Status: OK}
	var found []string
	if login != nil {
		found = append(found, "login sshd "+clean(string(login.ServerVersion())))
	}
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	// ssh -V writes to its standard error.
	out, err := site.RunBounded(ctx, r, maxSSHVersion, "sh", "-c", "ssh -V 2>&1")
	if err != nil {
		found = append(found, "ssh -V on the login node: "+clean(err.Error()))
	} else {
		found = append(found, "ssh -V on the login node: "+clean(firstLine(string(out))))
	}
	c.Found = strings.Join(found, "; ")
	return c
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// describeBanner names an sshd by its banner, for the forwarding lines.
func describeBanner(who string, conn ssh.Conn) string {
	return fmt.Sprintf("%s (%s)", who, clean(string(conn.ServerVersion())))
}
