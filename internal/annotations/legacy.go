package annotations

import (
	"maps"
	"slices"
	"strings"
)

// JobPrefix is the prefix of the job annotations of interLink's Slurm
// plugin (Flags, MPIFlags, ImageRoot, …).
const JobPrefix = "slurm-job.vk.io/"

// LegacyJobPrefix is the prefix the plugin's first versions read the job
// annotations under, after KNoC, the project it grew from. The plugin now
// reads JobPrefix only, but its README and interLink's tutorials still
// write slurm-job.knoc.io/flags, which interLink then drops without a word.
// sluice reads each annotation under it as its JobPrefix counterpart (Current).
const LegacyJobPrefix = "slurm-job.knoc.io/"

// EventLegacyPrefix is the reason of the Warning Event of an annotation
// under LegacyJobPrefix.
const EventLegacyPrefix = "AnnotationLegacyPrefix"

// Legacy is one annotation a pod sets under LegacyJobPrefix.
type Legacy struct {
	// Key is the annotation as the pod writes it: slurm-job.knoc.io/flags.
	Key string
	// Name is its name under JobPrefix: slurm-job.vk.io/flags.
	Name string
	// Ignored is true when the pod sets Name too: Name's value is used.
	Ignored bool
}

// Message says what sluice does with l, for its Warning Event.
func (l Legacy) Message() string {
	if l.Ignored {
		return truncate(l.Key) + " is ignored: the pod also sets " + truncate(l.Name) + ", which is used; " + LegacyJobPrefix + " is the legacy prefix of interLink's Slurm plugin: remove it"
	}
	return truncate(l.Key) + " is read as " + truncate(l.Name) + ": " + LegacyJobPrefix + " is the legacy prefix of interLink's Slurm plugin, which reads " + JobPrefix + " only: write " + truncate(l.Name)
}

// Current returns the annotations a pod's job and shadow are made from: a,
// with each annotation under LegacyJobPrefix renamed under JobPrefix unless
// a sets that name too, and the legacy annotations of a, by key. Everything
// a job is made of is read from the result only, so that a legacy
// annotation goes through every check of its new name and none other. The
// result is a itself when a sets no legacy annotation; it must not be
// changed.
func Current(a map[string]string) (map[string]string, []Legacy) {
	var legacy []Legacy
	for k := range a {
		if rest, ok := strings.CutPrefix(k, LegacyJobPrefix); ok {
			name := JobPrefix + rest
			_, set := a[name]
			legacy = append(legacy, Legacy{Key: k, Name: name, Ignored: set})
		}
	}
	if legacy == nil {
		return a, nil
	}
	slices.SortFunc(legacy, func(x, y Legacy) int { return strings.Compare(x.Key, y.Key) })
	cur := maps.Clone(a)
	for _, l := range legacy {
		delete(cur, l.Key)
		if !l.Ignored {
			cur[l.Name] = a[l.Key]
		}
	}
	return cur, legacy
}
