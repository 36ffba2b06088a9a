package jobscript

import (
	"fmt"
	"path"
	"strings"
)

// The enroot runtime (NVIDIA's). The batch script makes one enroot
// container per pod container before any runs (templates/enroot.sh.tmpl):
//
//	enroot import --output <job dir>/<name>.sqsh -- docker://…   (not for a .sqsh path)
//	enroot create --name <enroot name> -- <image file>
//
// and removes them when it ends. Each container then runs as
//
//	enroot start [--mount <hosts copy>:/etc/hosts…] <site options> <pod options>
//	    --env NAME… --mount <volume>… [--rc <job dir>/enroot.rc] <enroot name> [DIR] COMMAND…
//
// enroot keeps none of the caller's environment: the script sources the
// container's env file, as for the other runtimes, and --env NAME passes
// each variable on by name, its value out of the command line.

// enrootRCFile is the command script, relative to the job directory, that
// runs a container's command instead of the image's entrypoint (enroot
// start --rc): DIR COMMAND [ARG…], entering DIR unless it is empty.
const enrootRCFile = "enroot.rc"

// enrootRC is enrootRCFile's content, run by the container's /bin/sh.
const enrootRC = `# sluice: the command script of enroot start (--rc): DIR COMMAND [ARG...].
# The pod's command replaces the image's entrypoint, as in Kubernetes, and
# runs in DIR (the container's workingDir) unless DIR is empty.
if [ -n "$1" ]; then
	cd "$1" || exit 126
fi
shift
exec "$@"
`

// enrootSchemes are the image URIs enroot import takes as they are.
var enrootSchemes = []string{"docker://", "dockerd://", "podman://"}

// enrootName is the enroot container of container c of the job in jobDir:
// unique on the node for the job user (the job directory's name holds the
// pod's namespace and UID), a single path element as enroot wants it.
func enrootName(jobDir, container string) string {
	return "sluice-" + path.Base(jobDir) + "-" + container
}

// enrootImage gives the image enroot imports or unpacks: an absolute path
// (a squashfs image, unpacked as it is); a docker://, dockerd:// or
// podman:// URI; or a bare registry reference, imported from docker://.
// enroot reads a registry host before '#' (docker://nvcr.io#nvidia/x):
// the host of a reference or docker:// URI without '#' is written so.
func enrootImage(image string) (string, error) {
	if strings.HasPrefix(image, "/") {
		return image, nil
	}
	for _, s := range enrootSchemes {
		rest, ok := strings.CutPrefix(image, s)
		if !ok {
			continue
		}
		if rest == "" || strings.HasPrefix(rest, "-") {
			return "", fmt.Errorf("image %q has nothing usable after %s", image, s)
		}
		if s == "docker://" {
			return s + enrootRegistry(rest), nil
		}
		return image, nil
	}
	if !imageRef.MatchString(image) {
		return "", fmt.Errorf("image %q is not an absolute path, a supported URI or a registry reference", image)
	}
	return "docker://" + enrootRegistry(image), nil
}

// enrootRegistry writes the registry host of ref (a first element with a
// '.' or a ':', or localhost, as Docker reads it) before '#'. A reference
// with a '#', or a user (USER@) in its first element, already is enroot's.
func enrootRegistry(ref string) string {
	if strings.Contains(ref, "#") {
		return ref
	}
	host, rest, ok := strings.Cut(ref, "/")
	if !ok || strings.Contains(host, "@") || !(strings.ContainsAny(host, ".:") || host == "localhost") {
		return ref
	}
	return host + "#" + rest
}

// enrootArgv gives the arguments of enroot that run container c of the
// job in jobDir: start, opts (checked by checkEnrootWords), the
// container's variables by name, its volumes, the command script when the
// pod gives a command, the enroot container's name and the command line.
// A volume is bound read-only when the pod asks; x-create makes its target
// in the container when the image lacks it.
func enrootArgv(c *Container, jobDir string, opts []string) []string {
	a := append([]string{}, opts...)
	for _, n := range c.EnvNames {
		a = append(a, "--env", n)
	}
	for _, m := range c.Mounts {
		mode := ""
		if m.ReadOnly {
			mode = ",ro"
		}
		a = append(a, "--mount", jobDir+"/"+m.Source+":"+m.Target+":none:x-create=auto,bind"+mode)
	}
	if len(c.Command) > 0 {
		a = append(a, "--rc", jobDir+"/"+enrootRCFile)
	}
	a = append(a, enrootName(jobDir, c.Name))
	if len(c.Command) > 0 {
		a = append(a, c.WorkingDir)
	}
	a = append(a, c.Command...)
	return append(a, c.Args...)
}

// checkEnrootContainer checks what enroot needs of a container beyond
// what every runtime needs: a working directory comes with a command
// (enroot start has no working-directory option: sluice's command script
// enters it).
func checkEnrootContainer(c *Container) error {
	if c.WorkingDir != "" && len(c.Command) == 0 {
		return fmt.Errorf("container %s: runtime enroot runs a workingDir only with a command (enroot start has no working-directory option)", c.Name)
	}
	for _, n := range c.EnvNames {
		if err := checkAssignable(n); err != nil {
			return fmt.Errorf("container %s: %w", c.Name, err)
		}
	}
	return nil
}

// enrootContainer is one enroot container the script makes (enroot-setup).
type enrootContainer struct {
	Name  string // enrootName
	Image string // enrootImage
}

func newEnrootContainers(job *Job, jobDir string) []enrootContainer {
	var out []enrootContainer
	for _, cs := range [][]Container{job.Init, job.Containers} {
		for i := range cs {
			image, _ := enrootImage(cs[i].Image) // checked by checkContainer
			out = append(out, enrootContainer{Name: enrootName(jobDir, cs[i].Name), Image: image})
		}
	}
	return out
}
