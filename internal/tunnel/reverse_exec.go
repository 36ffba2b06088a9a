package tunnel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/sluice-hpc/sluice/internal/site"
	"golang.org/x/crypto/ssh"
)

// Modes of Reverse.NodeExec.
const (
	// NodeExecSSH reaches the node's own sshd through the login node.
	NodeExecSSH = "ssh"
	// NodeExecSrun runs the session's commands and its user-space sshd on
	// the node with srun from the login node, inside the job's allocation
	// (srun --jobid JOB --overlap -w NODE), for sites where ssh to the
	// compute nodes is not possible.
	NodeExecSrun = "srun"
)

// nodeExec runs the session's commands on the node: over client, a
// connection to the node's sshd, or, when srun is set, to the login node,
// each command carried there by srun.
type nodeExec struct {
	client *ssh.Client
	srun   []string // srun and its options, up to "--"; nil over the node's sshd
}

// command is the command line that runs cmd, a command line of the node,
// on the node.
func (ex nodeExec) command(cmd string) string {
	if ex.srun == nil {
		return cmd
	}
	return "exec " + site.Join(append(ex.srun[:len(ex.srun):len(ex.srun)], "/bin/sh", "-c", cmd))
}

// via names the connection the session runs over, in messages.
func (ex nodeExec) via() string {
	if ex.srun == nil {
		return "node"
	}
	return "login node (srun)"
}

// reach makes the way to node for a session: the node's sshd through
// login, or srun on login for the job named in JobFile.
func (s *reverseState) reach(ctx context.Context, login *ssh.Client, node string) (nodeExec, error) {
	if s.r.NodeExec != NodeExecSrun {
		client, err := s.r.Hop.Node(ctx, login, node)
		if err != nil {
			return nodeExec{}, err
		}
		return nodeExec{client: client}, nil
	}
	if err := CheckNode(node); err != nil {
		return nodeExec{}, err
	}
	job, err := ReadJob(s.r.JobFile)
	if err != nil {
		return nodeExec{}, err
	}
	if job == "" {
		return nodeExec{}, errors.New("srun: the job's id is not known yet")
	}
	// The login connection is the session's own: closing the session's
	// client closes it.
	return nodeExec{client: login, srun: []string{
		"srun", "--jobid=" + job, "--overlap", "--nodelist=" + node, "--nodes=1", "--ntasks=1",
		"--unbuffered", "--quiet", "--",
	}}, nil
}

// jobID is a Slurm job id: digits, or an array task's JOB_TASK.
var jobID = regexp.MustCompile(`^[0-9]{1,12}(_[0-9]{1,9})?$`)

// CheckJob checks that job is a Slurm job id (or "" for none).
func CheckJob(job string) error {
	if job != "" && !jobID.MatchString(job) {
		return fmt.Errorf("%q is not a Slurm job id", job)
	}
	return nil
}

// ReadJob reads the Slurm job id in file (a ConfigMap key beside the node
// file): "" when the file is empty, an error when it holds anything but a
// job id.
func ReadJob(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("job file: %w", err)
	}
	job := strings.TrimSpace(string(b))
	if err := CheckJob(job); err != nil {
		return "", fmt.Errorf("job file %s: %w", file, err)
	}
	return job, nil
}
