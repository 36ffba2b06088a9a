package jobscript

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/sbatch"
	"github.com/sluice-hpc/sluice/internal/textcut"
)

// ReasonAnnotationNotApplied is the reason of the Warning of an annotation
// that the site's runtime cannot apply (apptainer options under
// Charliecloud): the same as that of an annotation sluice does not
// implement.
const ReasonAnnotationNotApplied = annotations.EventNotImplemented

// runtimeAnnotations reads the annotations that shape how the containers
// run: apptainer or enroot mounts and options, mpiexec, the image root. It runs before
// the containers are built, which take the image root.
func (b *podBuilder) runtimeAnnotations() error {
	a := b.ann
	field := b.field
	for _, an := range []struct {
		name   string
		src    optionSource
		runs   func(Runtime) bool
		check  func([]string, optionSource) ([]string, error)
		rtName string
	}{
		{AnnotationSingularityMounts, mountsFromPod, Runtime.apptainer, checkApptainerOptions, "apptainer"},
		{AnnotationSingularityOptions, optionsFromPod, Runtime.apptainer, checkApptainerOptions, "apptainer"},
		{AnnotationEnrootMounts, mountsFromPod, Runtime.enroot, checkEnrootOptions, "enroot"},
		{AnnotationEnrootOptions, optionsFromPod, Runtime.enroot, checkEnrootOptions, "enroot"},
	} {
		v, ok := a[an.name]
		if !ok {
			continue
		}
		opts, err := an.check([]string{v}, an.src)
		if err != nil {
			return podErr(field(an.name), "%v", err)
		}
		if !an.runs(b.rt) {
			b.notApplied(an.name, fmt.Sprintf("the site's runtime is %s, not %s: the containers run without these options", b.rt, an.rtName))
			continue
		}
		b.job.RuntimeOptions = append(b.job.RuntimeOptions, opts...)
	}
	if v, ok := a[AnnotationMPIFlags]; ok {
		flags, err := mpiFlags(v)
		if err != nil {
			return podErr(field(AnnotationMPIFlags), "%v", err)
		}
		// interLink's plugin runs the containers without mpiexec when the
		// value is "true"; so does sluice, for the pods written for it.
		b.job.MPI = strings.TrimSpace(v) != "true"
		b.job.MPIFlags = flags
		if !b.job.MPI {
			b.job.MPIFlags = nil
		}
	}
	if v, ok := a[AnnotationImageRoot]; ok {
		if err := checkImageRoot(v); err != nil {
			return podErr(field(AnnotationImageRoot), "%v", err)
		}
		if b.rt == RuntimeNone {
			b.notApplied(AnnotationImageRoot, "the site's runtime is none: the containers run no image")
		}
		b.imageRoot, b.imageRootSet = v, true
	}
	return nil
}

func (b *podBuilder) notApplied(name, why string) {
	b.job.Warnings = append(b.job.Warnings, Warning{ReasonAnnotationNotApplied, b.key(name) + ": " + why})
}

// ReasonFlagDropped is the reason of the Warning of the job name a pod
// gives in AnnotationFlags, which its job does not take (podFlags).
const ReasonFlagDropped = "SlurmFlagDropped"

// maxDroppedText bounds the options a Warning of dropped flags quotes.
const maxDroppedText = 256

// dropped warns of the job name options the pod's AnnotationFlags gave, as
// written, if any.
func (b *podBuilder) dropped(written []string) {
	if len(written) == 0 {
		return
	}
	quoted := make([]string, len(written))
	for i, w := range written {
		quoted[i] = strconv.Quote(w)
	}
	text := textcut.Cut(strings.Join(quoted, ", "), maxDroppedText, "...")
	b.job.Warnings = append(b.job.Warnings, Warning{ReasonFlagDropped, fmt.Sprintf(
		"%s: %s dropped: sluice names the job after the pod UID, %s, to find it again", b.key(AnnotationFlags), text, b.job.UID)})
}

// readAnnotations reads the pod's annotations as annotations.Current does,
// into b.ann and b.written.
func (b *podBuilder) readAnnotations() {
	var legacy []annotations.Legacy
	b.ann, legacy = annotations.Current(b.pod.Annotations)
	for _, l := range legacy {
		if !l.Ignored {
			if b.written == nil {
				b.written = map[string]string{}
			}
			b.written[l.Name] = l.Key
		}
	}
}

// key is the annotation the pod wrote name under.
func (b *podBuilder) key(name string) string {
	if k, ok := b.written[name]; ok {
		return k
	}
	return name
}

// field is the path of annotation name in the pod, as it wrote it.
func (b *podBuilder) field(name string) string {
	return "metadata.annotations[" + b.key(name) + "]"
}

// mpiFlags splits the value of AnnotationMPIFlags into words as a shell
// would, without expanding anything; each becomes one argument of mpiexec,
// quoted. NUL and CR are refused.
func mpiFlags(v string) ([]string, error) {
	words, err := sbatch.SplitWords(v)
	if err != nil {
		return nil, err
	}
	for _, w := range words {
		if hasControl(w) {
			return nil, fmt.Errorf("%q: control characters are not allowed", w)
		}
	}
	return words, nil
}

// checkImageRoot checks an image root (the prefix of image names):
// printable ASCII without spaces, quotes, backslashes, '$' or '`'.
func checkImageRoot(s string) error {
	if strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r > '~' || strings.ContainsRune(`'"\$`+"`", r) }) {
		return fmt.Errorf("%q: an image root is printable ASCII without spaces, quotes, backslashes, '$' or '`'", s)
	}
	return nil
}
