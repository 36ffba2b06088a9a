package slurm

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/sluice-hpc/sluice/internal/annotations"
)

// enrootOption is what sluice knows of an option of enroot start.
type enrootOption struct {
	value   bool   // takes a value (the next word, or after '=')
	refused string // why sluice refuses it, "" when accepted
}

// enrootOptions are the options of enroot start (3.x) by long name; the
// one-letter forms are in enrootShort.
var enrootOptions = map[string]enrootOption{
	"root":  {},
	"rw":    {},
	"env":   {value: true},
	"mount": {value: true},
	"conf": {value: true, refused: "a configuration script runs before the container starts and may mount over /etc/hosts " +
		"(the reverse tunnel's hosts file) or replace the environment; put commands in " + annotations.PreExec},
	"rc": {value: true, refused: "sluice sets the command script: the pod's command replaces the image's entrypoint"},
}

var enrootShort = map[byte]string{'r': "root", 'w': "rw", 'e': "env", 'm': "mount", 'c': "conf"}

// envAssignment is enroot's --env value: KEY or KEY=VAL.
var envAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(=|$)`)

// checkEnrootOptions reads enroot start options, each element of opts one
// or more shell words ("--mount /a:/b --rw", as interLink joins them), and
// gives them as words, each option followed by its value: known options,
// with a value exactly when they take one, mounts checked by
// parseEnrootMount, not refused. Under mountsFromPod only mounts are
// taken, written as --mount SPEC or as a bare SPEC.
func checkEnrootOptions(opts []string, src optionSource) ([]string, error) {
	words, err := optionWords(opts)
	if err != nil {
		return nil, err
	}
	return checkEnrootWords(words, src)
}

// checkEnrootWords checks options already split into words.
func checkEnrootWords(words []string, src optionSource) ([]string, error) {
	var out []string
	for i := 0; i < len(words); i++ {
		word := words[i]
		if src == mountsFromPod && !strings.HasPrefix(word, "-") {
			if err := parseEnrootMount(word); err != nil {
				return nil, err
			}
			out = append(out, "--mount", word)
			continue
		}
		name, value, hasValue, err := enrootWord(word)
		if err != nil {
			return nil, err
		}
		opt, known := enrootOptions[name]
		switch {
		case !known:
			return nil, fmt.Errorf("%q: sluice does not know the enroot start option --%s", word, name)
		case opt.refused != "":
			return nil, fmt.Errorf("%q: --%s is refused: %s", word, name, opt.refused)
		case src == mountsFromPod && name != "mount":
			return nil, fmt.Errorf("%q: %s takes mounts only (--mount src:dst[:none[:options]])", word, annotations.EnrootMounts)
		case !opt.value && hasValue:
			return nil, fmt.Errorf("%q: --%s takes no value", word, name)
		case opt.value && !hasValue:
			if i+1 == len(words) || strings.HasPrefix(words[i+1], "-") {
				return nil, fmt.Errorf("%q: --%s needs a value", word, name)
			}
			i++
			value = words[i]
		}
		if !opt.value {
			out = append(out, "--"+name)
			continue
		}
		switch name {
		case "mount":
			err = parseEnrootMount(value)
		case "env":
			if !envAssignment.MatchString(value) || hasControl(value) {
				err = fmt.Errorf("--env %q: want KEY or KEY=VALUE, KEY a shell name, no control characters", value)
			}
		}
		if err != nil {
			return nil, err
		}
		out = append(out, "--"+name, value)
	}
	return out, nil
}

// enrootWord reads one option word: --name, --name=value, -x, -xvalue.
func enrootWord(word string) (name, value string, hasValue bool, err error) {
	return optionWord(word, enrootShort, "enroot start", "the container")
}

// enrootMountOptions are the mount options sluice passes on in an enroot
// mount: bind mounts and their flags. x-move and x-detach (which move or
// detach mounts enroot made) and other filesystems are refused.
var enrootMountOptions = map[string]bool{
	"bind": true, "rbind": true, "ro": true, "rw": true, "nosuid": true, "nodev": true, "noexec": true,
	"private": true, "rprivate": true, "slave": true, "rslave": true,
	"x-create=dir": true, "x-create=file": true, "x-create=auto": true,
}

// parseEnrootMount checks one mount as enroot start --mount takes it: an
// fstab line with its fields separated by colons, SRC:DST[:TYPE[:OPTIONS]]
// — SRC and DST clean absolute paths without spaces, TYPE none (a bind),
// OPTIONS among enrootMountOptions. A mount over /etc/hosts, or over a
// directory holding it, is refused: the reverse tunnel binds its hosts
// file there.
func parseEnrootMount(spec string) error {
	fields := strings.Split(spec, ":")
	if len(fields) < 2 || len(fields) > 4 {
		return fmt.Errorf("mount %q: want src:dst[:none[:options]]", spec)
	}
	for _, p := range fields[:2] {
		if !path.IsAbs(p) || path.Clean(p) != p || hasControl(p) || strings.ContainsAny(p, " \t,") {
			return fmt.Errorf("mount %q: %q is not a clean absolute path without spaces or commas", spec, p)
		}
	}
	if len(fields) > 2 && fields[2] != "none" {
		return fmt.Errorf("mount %q: the type is none (a bind mount), got %q", spec, fields[2])
	}
	if len(fields) > 3 {
		for _, o := range strings.Split(fields[3], ",") {
			if !enrootMountOptions[o] {
				return fmt.Errorf("mount %q: sluice does not pass the mount option %q (it takes bind, rbind, ro, rw, nosuid, nodev, noexec, the propagation flags and x-create)", spec, o)
			}
		}
	}
	if covers(fields[1]) {
		return fmt.Errorf("mount %q: it covers /etc/hosts, where the reverse tunnel binds its hosts file", spec)
	}
	return nil
}
