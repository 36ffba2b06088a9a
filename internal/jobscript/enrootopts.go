package jobscript

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/sluice-hpc/sluice/internal/annotations"
)

// enrootOptions are the options of enroot start (3.x) by long name; the
// one-letter forms are in enrootShort.
var enrootOptions = map[string]optionRule{
	"root":  {},
	"rw":    {},
	"env":   {value: true},
	"mount": {value: true},
	"conf": {value: true, refused: "a configuration script runs before the container starts and may mount over /etc/hosts " +
		"(the reverse tunnel's hosts file) or replace the environment; put commands in " + annotations.PreExec},
	"rc": {value: true, refused: "sluice sets the command script: the pod's command replaces the image's entrypoint"},
}

var enrootShort = map[byte]string{'r': "root", 'w': "rw", 'e': "env", 'm': "mount", 'c': "conf"}

// enrootGrammar is how walkOptions reads enroot start options.
var enrootGrammar = optionGrammar{
	runtime: "enroot start",
	what:    "the container",
	short:   enrootShort,
	rule: func(name string) (optionRule, bool) {
		o, ok := enrootOptions[name]
		return o, ok
	},
	mount:      "mount",
	mountsOnly: annotations.EnrootMounts + " takes mounts only (--mount src:dst[:none[:options]])",
	bareMounts: true,
}

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
	return enrootGrammar.walkOptions(words, src, takeEnrootValue)
}

// takeEnrootValue checks the value of an enroot start option that takes
// one and gives them as two words.
func takeEnrootValue(name, value string) ([]string, error) {
	switch name {
	case "mount":
		if err := parseEnrootMount(value); err != nil {
			return nil, err
		}
	case "env":
		if !envAssignment.MatchString(value) || hasControl(value) {
			return nil, fmt.Errorf("--env %q: want KEY or KEY=VALUE, KEY a shell name, no control characters", value)
		}
	}
	return []string{"--" + name, value}, nil
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
