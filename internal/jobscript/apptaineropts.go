package jobscript

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/sluice-hpc/sluice/internal/annotations"
)

// apptainerOption is what sluice knows of an option of apptainer exec/run.
type apptainerOption struct {
	value bool // takes a value (the next word, or after '=')
	bind  bool // its value is a bind list, checked by parseBinds
	// mounts: its value names container paths (--home src[:dst],
	// --scratch dir,…), which must not cover a protected target
	mounts bool
	// refused is why sluice refuses it, "" when it is accepted.
	refused string
}

const (
	whyNetwork = "a network namespace cuts the containers off the node's network, where the reverse tunnel's relay and the shadow's forwards reach them"
	whyPrivs   = "it gives the containers privileges beyond the job user's, which the site's isolation of jobs relies on"
	whyEnvFile = "sluice gives the containers the pod's environment through its own env file"
	whyPwd     = "the container's workingDir sets it"
	whyMount   = "write binds as --bind src:dst[:ro], which sluice checks"
)

// apptainerOptions are the options of apptainer exec and run (1.x) that
// sluice passes on, or refuses with the reason; one-letter forms map to
// their long names in apptainerShort.
var apptainerOptions = map[string]apptainerOption{
	"nv": {}, "nvccli": {}, "rocm": {}, "no-eval": {}, "containall": {}, "contain": {},
	"cleanenv": {}, "ipc": {}, "pid": {}, "no-pid": {}, "userns": {}, "uts": {}, "writable": {},
	"writable-tmpfs": {}, "no-home": {}, "no-init": {}, "no-privs": {}, "no-umask": {}, "no-https": {},
	"fakeroot": {}, "disable-cache": {}, "compat": {}, "unsquash": {}, "sharens": {}, "no-setgroups": {},
	"bind":      {value: true, bind: true},
	"env":       {value: true},
	"home":      {value: true, mounts: true},
	"workdir":   {value: true},
	"scratch":   {value: true, mounts: true},
	"overlay":   {value: true},
	"app":       {value: true},
	"hostname":  {value: true},
	"dns":       {value: true},
	"no-mount":  {value: true},
	"drop-caps": {value: true},
	"cpus":      {value: true}, "memory": {value: true}, "memory-reservation": {value: true},
	"memory-swap": {value: true}, "cpu-shares": {value: true}, "cpuset-cpus": {value: true},
	"pids-limit": {value: true}, "oci": {},
	"mount":         {value: true, refused: whyMount},
	"env-file":      {value: true, refused: whyEnvFile},
	"pwd":           {value: true, refused: whyPwd},
	"net":           {refused: whyNetwork},
	"network":       {value: true, refused: whyNetwork},
	"network-args":  {value: true, refused: whyNetwork},
	"add-caps":      {value: true, refused: whyPrivs},
	"allow-setuid":  {refused: whyPrivs},
	"keep-privs":    {refused: whyPrivs},
	"security":      {value: true, refused: whyPrivs},
	"apply-cgroups": {value: true, refused: "the job's resources are Slurm's, from the pod"},
	"boot":          {refused: whyPrivs},
}

// apptainerShort are apptainer's one-letter options.
var apptainerShort = map[byte]string{
	'B': "bind", 'C': "containall", 'c': "contain", 'e': "cleanenv", 'i': "ipc", 'p': "pid",
	'u': "userns", 'w': "writable", 'H': "home", 'W': "workdir", 'S': "scratch", 'o': "overlay",
	'f': "fakeroot", 'n': "net",
}

// apptainerGrammar is how walkOptions reads apptainer options.
var apptainerGrammar = optionGrammar{
	runtime: "apptainer",
	what:    "the image",
	short:   apptainerShort,
	rule: func(name string) (optionRule, bool) {
		o, ok := apptainerOptions[name]
		return optionRule{value: o.value, refused: o.refused}, ok
	},
	mount:      "bind",
	mountsOnly: annotations.SingularityMounts + " takes binds only (--bind src:dst[:ro])",
}

// checkApptainerOptions reads apptainer options, each element of opts one
// or more shell words ("--bind /a:/b", as interLink joins them), and gives
// them as words in long form (--name, --name=value), each checked: a known
// option, with a value exactly when it takes one, binds checked by
// parseBinds, not refused. A word that is not an option is refused: it
// would be read as the image.
func checkApptainerOptions(opts []string, src optionSource) ([]string, error) {
	words, err := optionWords(opts)
	if err != nil {
		return nil, err
	}
	return checkApptainerWords(words, src)
}

// checkApptainerWords checks options already split into words (as
// checkApptainerOptions gives them) and gives them in long form.
func checkApptainerWords(words []string, src optionSource) ([]string, error) {
	return apptainerGrammar.walkOptions(words, src, takeApptainerValue)
}

// takeApptainerValue checks the value of an apptainer option that takes
// one: no control characters, binds checked by parseBinds, the paths of
// mounts by checkMountTargets. It gives the option as one word,
// --name=value.
func takeApptainerValue(name, value string) ([]string, error) {
	if hasControl(value) {
		return nil, fmt.Errorf("--%s %q: control characters are not allowed", name, value)
	}
	opt := apptainerOptions[name]
	if opt.bind {
		if _, err := parseBinds(value); err != nil {
			return nil, fmt.Errorf("--%s %q: %w", name, value, err)
		}
	}
	if opt.mounts {
		if err := checkMountTargets(name, value); err != nil {
			return nil, fmt.Errorf("--%s %q: %w", name, value, err)
		}
	}
	return []string{"--" + name + "=" + value}, nil
}

// checkMountTargets checks the container paths that --home (src[:dst])
// and --scratch (dir,dir…) mount over: none may cover a protected target.
func checkMountTargets(name, value string) error {
	targets := strings.Split(value, ",")
	if name == "home" {
		src, dst, ok := strings.Cut(value, ":")
		targets = []string{src}
		if ok {
			targets = []string{dst}
		}
	}
	for _, dst := range targets {
		if covers(path.Clean("/" + dst)) {
			return fmt.Errorf("it covers /etc/hosts, where the reverse tunnel binds its hosts file")
		}
	}
	return nil
}

// covers reports whether a mount at dst covers a protected target.
func covers(dst string) bool {
	for _, t := range protectedTargets {
		if dst == t || strings.HasPrefix(t, strings.TrimSuffix(dst, "/")+"/") {
			return true
		}
	}
	return false
}

// Bind is one bind of a --bind list: src[:dst[:ro|rw]].
type Bind struct {
	Src, Dst string
	// Mode is "ro", "rw" or "" (apptainer's default, rw).
	Mode string
}

// String writes b as apptainer reads it.
func (b Bind) String() string {
	s := b.Src
	if b.Dst != "" {
		s += ":" + b.Dst
	}
	if b.Mode != "" {
		s += ":" + b.Mode
	}
	return s
}

// protectedTargets are the container paths no bind of a pod may cover:
// the reverse tunnel binds its hosts file over /etc/hosts.
var protectedTargets = []string{"/etc/hosts"}

// parseBinds reads a bind list as apptainer's --bind takes it: binds
// separated by commas, each src[:dst[:ro|rw]], src and dst clean absolute
// paths (dst defaults to src). A bind over /etc/hosts, or over a directory
// holding it, is refused: the reverse tunnel binds its hosts file there.
func parseBinds(list string) ([]Bind, error) {
	if list == "" {
		return nil, errors.New("an empty bind list")
	}
	var binds []Bind
	for _, spec := range strings.Split(list, ",") {
		parts := strings.Split(spec, ":")
		if len(parts) > 3 {
			return nil, fmt.Errorf("bind %q: want src[:dst[:ro|rw]]", spec)
		}
		b := Bind{Src: parts[0]}
		if len(parts) > 1 {
			b.Dst = parts[1]
		}
		if len(parts) > 2 {
			b.Mode = parts[2]
			if b.Mode != "ro" && b.Mode != "rw" {
				return nil, fmt.Errorf("bind %q: the mode is ro or rw, got %q", spec, b.Mode)
			}
		}
		checked := []string{b.Src}
		if len(parts) > 1 {
			checked = append(checked, b.Dst)
		}
		for _, p := range checked {
			if !path.IsAbs(p) || path.Clean(p) != p || hasControl(p) || strings.ContainsAny(p, " \t") {
				return nil, fmt.Errorf("bind %q: %q is not a clean absolute path without spaces", spec, p)
			}
		}
		dst := b.Dst
		if dst == "" {
			dst = b.Src
		}
		if covers(dst) {
			return nil, fmt.Errorf("bind %q: it covers /etc/hosts, where the reverse tunnel binds its hosts file", spec)
		}
		binds = append(binds, b)
	}
	return binds, nil
}
