package jobscript

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/sbatch"
)

// SiteOptions are the site keys of interLink's Slurm plugin that shape
// every job (config.Plugin), checked and in the form the job needs. The
// zero value is sluice's own behaviour: no flavors, no prefix, the
// runtime's program found in PATH, #!/bin/sh, pod data exported.
type SiteOptions struct {
	// Flavors, by name, and the default one ("" for none).
	Flavors       map[string]Flavor
	DefaultFlavor string
	// CommandPrefix runs in the batch script's shell before the pre-exec
	// snippet.
	CommandPrefix string
	// Shell is the #! interpreter of the batch script; "" is /bin/sh.
	Shell string
	// NoPodData refuses the pods that mount ConfigMap, Secret, projected or
	// downward API volumes (ExportPodData: false).
	NoPodData bool
	// ImagePrefix is put before image names (see imageWithRoot).
	ImagePrefix string
	// RuntimePath is the runtime's program, a name or an absolute path; ""
	// is the runtime's own name.
	RuntimePath string
	// RuntimeOptions go to every apptainer exec or run, or enroot start,
	// before the pod's.
	RuntimeOptions []string
	// Probes runs the containers' probes and lifecycle hooks in the job
	// (EnableProbes).
	Probes bool
	// Comment is the template of the jobs' comment (Site.JobComment), with
	// the placeholders {namespace} and {name}; "" gives the jobs none.
	Comment string
	// Sbatch are the options of the site's sbatch, which the pods' flags
	// are checked against (LearnSbatch). If nil, sluice's built-in table.
	// The flavors' flags are checked against the built-in table when the
	// configuration is loaded, before the site is asked.
	Sbatch *sbatch.Options
}

// Flavor is a flavor made ready for jobs.
type Flavor struct {
	Name string
	// CPUs and MemoryMiB are the job's when the pod sets none; 0 for none.
	CPUs      int64
	MemoryMiB int64
	// Flags are its sbatch options, split and checked as the pods' are.
	Flags []string
	// GPUs is the GPU count its flags ask for (--gres=gpu[:type]:N or
	// --gpus=N), 0 for none.
	GPUs int64
}

// NewSiteOptions turns the plugin keys of a validated configuration into
// SiteOptions, checking what config.Validate leaves to this package: the
// flavors' sbatch options and the apptainer options. Errors name the key.
func NewSiteOptions(s config.Site) (SiteOptions, error) {
	p := s.Plugin
	o := SiteOptions{
		DefaultFlavor: p.DefaultFlavor, CommandPrefix: p.CommandPrefix, Shell: p.BashPath,
		NoPodData: !p.ExportsPodData(), ImagePrefix: p.ImageRoot(), Probes: p.EnableProbes,
		Comment: s.JobComment,
	}
	var errs []error
	if err := checkCommentTemplate(s.JobComment); err != nil {
		errs = append(errs, fmt.Errorf("Site.JobComment: %w", err))
	}
	rt := Runtime(s.ContainerRuntime)
	if rt == RuntimeApptainer || rt == RuntimeSingularity {
		o.RuntimePath = p.SingularityPath
		opts, err := checkApptainerOptions(p.SingularityDefaultOptions, optionsFromSite)
		if err != nil {
			errs = append(errs, fmt.Errorf("Site.SingularityDefaultOptions: %w", err))
		}
		o.RuntimeOptions = opts
	}
	pathKey := "Site.SingularityPath"
	if rt == RuntimeEnroot {
		pathKey = "Site.EnrootPath"
		o.RuntimePath = p.EnrootPath
		if p.EnrootPrefix != "" {
			o.ImagePrefix = p.EnrootPrefix
		}
		opts, err := checkEnrootOptions(p.EnrootDefaultOptions, optionsFromSite)
		if err != nil {
			errs = append(errs, fmt.Errorf("Site.EnrootDefaultOptions: %w", err))
		}
		o.RuntimeOptions = opts
	}
	for key, v := range map[string]string{pathKey: o.RuntimePath, "Site.BashPath": o.Shell} {
		if v != "" && !programPath.MatchString(v) {
			errs = append(errs, fmt.Errorf("%s: must be letters, digits and _./+- only, got %q", key, v))
		}
	}
	if err := checkScriptText(p.CommandPrefix); err != nil {
		errs = append(errs, fmt.Errorf("Site.CommandPrefix: %w", err))
	}
	for _, name := range slices.Sorted(maps.Keys(p.Flavors)) {
		f, err := newFlavor(name, p.Flavors[name])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if o.Flavors == nil {
			o.Flavors = map[string]Flavor{}
		}
		o.Flavors[name] = f
	}
	if err := errors.Join(errs...); err != nil {
		return SiteOptions{}, err
	}
	return o, nil
}

func newFlavor(name string, cf config.Flavor) (Flavor, error) {
	key := "Site.Flavors." + name
	mem, err := cf.MemoryBytes()
	if err != nil {
		return Flavor{}, fmt.Errorf("%s.MemoryDefault: %w", key, err)
	}
	f := Flavor{Name: name, CPUs: cf.CPUDefault, MemoryMiB: ceilDiv(mem, mib)}
	for i, s := range cf.SlurmFlags {
		flags, err := sbatch.SplitFlags(s)
		if err != nil {
			return Flavor{}, fmt.Errorf("%s.SlurmFlags[%d]: %w", key, i, err)
		}
		f.Flags = append(f.Flags, flags...)
	}
	f.GPUs = flagsGPUs(f.Flags)
	return f, nil
}

// checkScript checks what of o reaches the batch script as it is.
func (o *SiteOptions) checkScript(rt Runtime) error {
	if err := checkScriptText(o.CommandPrefix); err != nil {
		return fmt.Errorf("command prefix %w", err)
	}
	if o.Shell != "" && (!path.IsAbs(o.Shell) || path.Clean(o.Shell) != o.Shell || strings.ContainsFunc(o.Shell, unsafeShellRune)) {
		return fmt.Errorf("interpreter %q is not a clean absolute path of printable ASCII without spaces", o.Shell)
	}
	if o.RuntimePath != "" && !programPath.MatchString(o.RuntimePath) {
		return fmt.Errorf("runtime program %q is not a name or an absolute path of letters, digits and _./+- only", o.RuntimePath)
	}
	if err := checkRuntimeOptions(rt, o.RuntimeOptions, optionsFromSite); err != nil {
		return fmt.Errorf("site %w", err)
	}
	return nil
}

// checkRuntimeOptions checks runtime options already in words: apptainer
// options for apptainer, enroot start options for enroot, none for the
// other runtimes.
func checkRuntimeOptions(rt Runtime, words []string, src optionSource) error {
	var err error
	switch {
	case rt.apptainer():
		_, err = checkApptainerWords(words, src)
	case rt == RuntimeEnroot:
		_, err = checkEnrootWords(words, src)
	case len(words) > 0:
		err = fmt.Errorf("runtime %s takes no options", rt)
	}
	if err != nil {
		return fmt.Errorf("%s options: %w", rt, err)
	}
	return nil
}

// programPath is a program's name or path as the script writes it unquoted.
var programPath = regexp.MustCompile(`^[A-Za-z0-9_./+-]+$`)

func unsafeShellRune(r rune) bool { return r <= ' ' || r > '~' }
