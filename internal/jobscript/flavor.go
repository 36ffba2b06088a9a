package jobscript

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-hpc/sluice/internal/annotations"
)

// AnnotationFlavor names the flavor of a pod's job (interLink's).
const AnnotationFlavor = annotations.Flavor

// Reasons of the Warning Events of a job's flavor (Job.Warnings).
const (
	ReasonFlavorNotFound = "FlavorNotFound"
	ReasonNoGPUFlavor    = "NoGPUFlavor"
)

// Warning is something a job was made without, that its pod should say in a
// Warning Event.
type Warning struct {
	Reason, Message string
}

// chooseFlavor picks the flavor of a job whose pod asks for gpus GPUs, as
// interLink does: the one the pod names in AnnotationFlavor; else, for a pod
// asking for GPUs, the flavor whose flags ask for that many GPUs (the first
// by name); else the default. A flavor the site does not have, or a GPU
// count no flavor has, gives a Warning and the next choice. nil when the
// site has no flavors or no default applies.
func (o *SiteOptions) chooseFlavor(annotation string, named bool, gpus int64) (*Flavor, []Warning) {
	if len(o.Flavors) == 0 {
		if named {
			return nil, []Warning{{ReasonFlavorNotFound, fmt.Sprintf("%s %q: the site has no flavors; the job's resources come from the pod", AnnotationFlavor, annotation)}}
		}
		return nil, nil
	}
	var ws []Warning
	if named {
		if f, ok := o.Flavors[annotation]; ok {
			return &f, nil
		}
		ws = append(ws, Warning{ReasonFlavorNotFound, fmt.Sprintf("%s %q: the site has no such flavor (it has %s); %s",
			AnnotationFlavor, annotation, strings.Join(o.flavorNames(), ", "), o.fallback(gpus))})
	}
	if gpus > 0 {
		for _, name := range o.flavorNames() {
			if f := o.Flavors[name]; f.GPUs == gpus {
				return &f, ws
			}
		}
		ws = append(ws, Warning{ReasonNoGPUFlavor, fmt.Sprintf("the pod asks for %d GPUs and no flavor of the site asks for %d; %s",
			gpus, gpus, o.defaultText())})
	}
	if f, ok := o.Flavors[o.DefaultFlavor]; ok {
		return &f, ws
	}
	return nil, ws
}

func (o *SiteOptions) fallback(gpus int64) string {
	if gpus > 0 {
		return "the flavor is chosen by the pod's GPUs"
	}
	return o.defaultText()
}

func (o *SiteOptions) defaultText() string {
	if o.DefaultFlavor == "" {
		return "the job gets no flavor (Site.DefaultFlavor is not set)"
	}
	return fmt.Sprintf("the job gets the default flavor %s", o.DefaultFlavor)
}

func (o *SiteOptions) flavorNames() []string { return slices.Sorted(maps.Keys(o.Flavors)) }

// applyFlavor gives the job f's flags, and f's CPUs and memory where the
// pod sets none.
func applyFlavor(job *Job, f *Flavor) {
	job.Flavor = f.Name
	job.FlavorFlags = slices.Clone(f.Flags)
	if job.Resources.CPUs == 0 {
		job.Resources.CPUs = f.CPUs
	}
	if job.Resources.MemoryMiB == 0 {
		job.Resources.MemoryMiB = f.MemoryMiB
	}
}

// flagsGPUs is the GPU count that sbatch flags ask for: the last
// --gres=…gpu[:type]:N… or --gpus=N among them, 0 for none. A gres of gpu
// without a count is one GPU, as Slurm reads it.
func flagsGPUs(flags []string) int64 {
	var n int64
	for _, f := range flags {
		switch {
		case strings.HasPrefix(f, "--gpus="):
			if v, err := strconv.ParseInt(strings.TrimPrefix(f, "--gpus="), 10, 64); err == nil && v >= 0 {
				n = v
			}
		case strings.HasPrefix(f, "--gres="):
			for _, g := range strings.Split(strings.TrimPrefix(f, "--gres="), ",") {
				if v, ok := gresGPUs(g); ok {
					n = v
				}
			}
		}
	}
	return n
}

// gresGPUs reads one gres entry: gpu, gpu:N, gpu:type, gpu:type:N.
func gresGPUs(g string) (int64, bool) {
	parts := strings.Split(g, ":")
	if parts[0] != "gpu" || len(parts) > 3 {
		return 0, false
	}
	if len(parts) == 1 {
		return 1, true
	}
	if v, err := strconv.ParseInt(parts[len(parts)-1], 10, 64); err == nil && v >= 0 {
		return v, true
	}
	if len(parts) == 2 {
		return 1, true // gpu:type
	}
	return 0, false
}
