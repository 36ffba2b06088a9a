package jobscript

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// imageRef matches a bare registry reference: [host[:port]/]path[:tag][@digest].
var imageRef = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(:[0-9]+)?(/[A-Za-z0-9][A-Za-z0-9._-]*)*` +
	`(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@[a-z0-9]+([.+_-][a-z0-9]+)*:[A-Fa-f0-9]{32,})?$`)

// apptainerSchemes are the image URIs passed to apptainer as they are.
var apptainerSchemes = []string{"docker://", "oras://", "library://"}

// Binary is the program a runtime runs containers with, looked up in PATH by
// the batch script; empty for RuntimeNone.
func (r Runtime) Binary() string {
	switch r {
	case RuntimeApptainer:
		return "apptainer"
	case RuntimeSingularity:
		return "singularity"
	case RuntimeCharliecloud:
		return "ch-run"
	case RuntimeEnroot:
		return "enroot"
	}
	return ""
}

// Validate reports whether r is a runtime sluice knows.
func (r Runtime) Validate() error {
	switch r {
	case RuntimeApptainer, RuntimeSingularity, RuntimeCharliecloud, RuntimeEnroot, RuntimeNone:
		return nil
	}
	return fmt.Errorf("unknown container runtime %q (want apptainer, singularity, charliecloud, enroot or none)", r)
}

// image gives the image argument the runtime is called with.
//
// Apptainer takes docker://, oras:// and library:// URIs and absolute paths
// (a SIF file or a sandbox directory) as they are, and turns a bare registry
// reference into docker://<ref>. Charliecloud takes an absolute path to an
// image directory, or the name of an image in ch-image storage. RuntimeNone
// ignores the image.
func (r Runtime) image(image string) (string, error) {
	if r == RuntimeNone {
		return "", nil
	}
	if hasControl(image) || strings.ContainsAny(image, " \t") {
		return "", fmt.Errorf("image %q holds a space or a control character", image)
	}
	if strings.HasPrefix(image, "/") {
		if path.Clean(image) != image {
			return "", fmt.Errorf("image path %q is not clean", image)
		}
		return image, nil
	}
	if r == RuntimeEnroot {
		return enrootImage(image)
	}
	if r == RuntimeApptainer || r == RuntimeSingularity {
		for _, s := range apptainerSchemes {
			if rest, ok := strings.CutPrefix(image, s); ok {
				if rest == "" || strings.HasPrefix(rest, "-") {
					return "", fmt.Errorf("image %q has nothing usable after %s", image, s)
				}
				return image, nil
			}
		}
	}
	if !imageRef.MatchString(image) {
		return "", fmt.Errorf("image %q is not an absolute path, a supported URI or a registry reference", image)
	}
	if r == RuntimeCharliecloud {
		return image, nil
	}
	return "docker://" + image, nil
}

// needsCommand reports whether the runtime cannot fall back on an image's
// default command: ch-run has none, and RuntimeNone has no image.
func (r Runtime) needsCommand() bool {
	return r == RuntimeCharliecloud || r == RuntimeNone
}

// mountsSupported reports whether the runtime can mount volumes: RuntimeNone
// runs on the node's own filesystem, where a mount target cannot be made.
func (r Runtime) mountsSupported() bool { return r != RuntimeNone }

// argv gives the arguments of the runtime's binary (or, for RuntimeNone, the
// command line itself) that run container c of a job in jobDir. c must have
// been checked with checkContainer. opts are apptainer options, checked by
// checkApptainerOptions, given right after exec or run, or enroot start
// options (checkEnrootOptions). For enroot the verb, start, is not in
// them: the script puts the hosts copy's bind between (Runtime.verb).
func (r Runtime) argv(c *Container, jobDir string, opts []string) []string {
	if r == RuntimeEnroot {
		return enrootArgv(c, jobDir, opts)
	}
	image, _ := r.image(c.Image) // checked by checkContainer
	src := func(m Mount) string { return jobDir + "/" + m.Source }
	var a []string
	switch r {
	case RuntimeApptainer, RuntimeSingularity:
		verb := "exec"
		if len(c.Command) == 0 {
			verb = "run"
		}
		a = append(a, verb)
		a = append(a, opts...)
		if c.EnvFile != "" {
			a = append(a, "--env-file", jobDir+"/"+c.EnvFile)
		}
		for _, m := range c.Mounts {
			b := src(m) + ":" + m.Target
			if m.ReadOnly {
				b += ":ro"
			}
			a = append(a, "--bind", b)
		}
		if c.WorkingDir != "" {
			a = append(a, "--pwd", c.WorkingDir)
		}
		a = append(a, image)
	case RuntimeCharliecloud:
		// ch-run binds are read-write: it has no read-only bind.
		for _, m := range c.Mounts {
			a = append(a, "-b", src(m)+":"+m.Target)
		}
		if c.WorkingDir != "" {
			a = append(a, "--cd="+c.WorkingDir)
		}
		a = append(a, image, "--")
	}
	a = append(a, c.Command...)
	return append(a, c.Args...)
}

// checkContainer checks what the batch script needs of a container.
func (r Runtime) checkContainer(c *Container) error {
	if err := CheckContainerName(c.Name); err != nil {
		return err
	}
	if _, err := r.image(c.Image); err != nil {
		return fmt.Errorf("container %s: %w", c.Name, err)
	}
	if r.needsCommand() && len(c.Command) == 0 {
		return fmt.Errorf("container %s: runtime %s needs a command", c.Name, r)
	}
	if c.WorkingDir != "" {
		if err := checkWorkingDir(c.WorkingDir); err != nil {
			return fmt.Errorf("container %s: %w", c.Name, err)
		}
	}
	if r == RuntimeEnroot {
		if err := checkEnrootContainer(c); err != nil {
			return err
		}
	}
	if i, err := checkArgv(c.Command); err != nil {
		return fmt.Errorf("container %s: command[%d] %w", c.Name, i, err)
	}
	if i, err := checkArgv(c.Args); err != nil {
		return fmt.Errorf("container %s: args[%d] %w", c.Name, i, err)
	}
	if c.EnvFile != "" {
		if err := checkRelPath(c.EnvFile); err != nil {
			return fmt.Errorf("container %s: env file: %w", c.Name, err)
		}
	}
	if len(c.Mounts) > 0 && !r.mountsSupported() {
		return fmt.Errorf("container %s: runtime %s cannot mount volumes", c.Name, r)
	}
	for _, m := range c.Mounts {
		if err := checkRelPath(m.Source); err != nil {
			return fmt.Errorf("container %s: mount source: %w", c.Name, err)
		}
		if strings.ContainsAny(m.Source, ":,") {
			return fmt.Errorf("container %s: mount source %q holds ':' or ','", c.Name, m.Source)
		}
		if err := checkMountTarget(m.Target); err != nil {
			return fmt.Errorf("container %s: mount target: %w", c.Name, err)
		}
	}
	return nil
}

// apptainer reports whether r runs containers with apptainer (or
// singularity), which takes apptainer options.
func (r Runtime) apptainer() bool { return r == RuntimeApptainer || r == RuntimeSingularity }

// verb is the word the runtime's program takes before any option, and
// before the bind of the reverse tunnel's hosts copy: enroot's start.
func (r Runtime) verb() string {
	if r == RuntimeEnroot {
		return "start"
	}
	return ""
}

// hostsBind is what binds the reverse tunnel's hosts copy over the
// containers' /etc/hosts on each container line (after the verb), for the
// runtimes that take it there; a fixed text of the script, which sets
// sluice_hosts. Apptainer takes it from APPTAINER_BIND instead. enroot is
// also given the relay's variables there (relayEnv).
func (r Runtime) hostsBind() string {
	switch r {
	case RuntimeCharliecloud:
		return `-b "$sluice_hosts:/etc/hosts"`
	case RuntimeEnroot:
		return `--mount "$sluice_hosts:/etc/hosts:none:x-create=file,bind" ` + r.relayEnv()
	}
	return ""
}

// relayEnv passes the relay's SLUICE_POD_IP and SLUICE_PORT_FILE by name
// on each container line of a job with a relay, for enroot, which keeps
// none of the caller's environment (ch-run keeps them, apptainer gets
// them as APPTAINERENV_).
func (r Runtime) relayEnv() string {
	if r == RuntimeEnroot {
		return "--env SLUICE_POD_IP --env SLUICE_PORT_FILE"
	}
	return ""
}

// enroot reports whether r runs containers with enroot.
func (r Runtime) enroot() bool { return r == RuntimeEnroot }
