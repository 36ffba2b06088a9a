package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// flavorName is the shape of a flavor's name: it is the value of the
// slurm-job.vk.io/flavor annotation and appears in Events.
var flavorName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$`)

// programName is a program looked up in PATH.
var programName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._+-]*$`)

// maxMemoryDefault bounds MemoryDefault (1 PiB), as the pods' own memory is.
const maxMemoryDefault = 1 << 50

// validate checks the plugin keys. The sbatch options of the flavors and
// the apptainer options are checked further by the slurm package
// (jobscript.SiteOptions.Validate), at start-up too.
func (p *Plugin) validate(bad reporter, runtime string) {
	for _, name := range p.flavorNames() {
		f := p.Flavors[name]
		key := "Site.Flavors." + name
		if !flavorName.MatchString(name) {
			bad(key, "a flavor's name must be letters, digits, '.', '_' or '-', at most 63, starting and ending with a letter or digit")
		}
		if f.Name != "" && f.Name != name {
			bad(key+".Name", "must be the flavor's key %q or empty, got %q", name, f.Name)
		}
		if f.CPUDefault < 0 || f.CPUDefault > 1_000_000 {
			bad(key+".CPUDefault", "must be 0-1000000, got %d", f.CPUDefault)
		}
		if _, err := f.MemoryBytes(); err != nil {
			bad(key+".MemoryDefault", "%v", err)
		}
		if f.UID != nil {
			bad(key+".UID", "sluice runs every job as the site's user (Network.SSH.User); remove UID")
		}
		for i, flag := range f.SlurmFlags {
			if strings.TrimSpace(flag) == "" {
				bad(fmt.Sprintf("%s.SlurmFlags[%d]", key, i), "is empty")
			}
		}
	}
	if p.DefaultFlavor != "" {
		if _, ok := p.Flavors[p.DefaultFlavor]; !ok {
			bad("Site.DefaultFlavor", "names no flavor of Site.Flavors (%s), got %q", strings.Join(p.flavorNames(), ", "), p.DefaultFlavor)
		}
	}
	if strings.IndexByte(p.CommandPrefix, 0) >= 0 || strings.Contains(p.CommandPrefix, "\r\n") {
		bad("Site.CommandPrefix", "holds a NUL byte or a CR LF line break, which sbatch refuses in a batch script")
	}
	absPath(bad, "Site.BashPath", p.BashPath, false)
	if p.ImagePrefix != "" && p.SingularityPrefix != "" && p.ImagePrefix != p.SingularityPrefix {
		bad("Site.SingularityPrefix", "is the older name of Site.ImagePrefix: set one of them, or both the same (got %q and %q)", p.SingularityPrefix, p.ImagePrefix)
	}
	for key, v := range map[string]string{
		"Site.ImagePrefix": p.ImagePrefix, "Site.SingularityPrefix": p.SingularityPrefix, "Site.EnrootPrefix": p.EnrootPrefix,
	} {
		if err := imagePrefix(v); err != nil {
			bad(key, "%v", err)
		}
	}
	for key, v := range map[string]string{"Site.SingularityPath": p.SingularityPath, "Site.EnrootPath": p.EnrootPath} {
		if v == "" || programName.MatchString(v) {
			continue
		}
		absPath(bad, key, v, false)
	}
	for key, opts := range map[string][]string{
		"Site.SingularityDefaultOptions": p.SingularityDefaultOptions, "Site.EnrootDefaultOptions": p.EnrootDefaultOptions,
	} {
		for i, o := range opts {
			if !strings.HasPrefix(o, "-") {
				bad(fmt.Sprintf("%s[%d]", key, i), "must be an option (starting with '-'), got %q", o)
			}
		}
	}
	if len(p.SingularityDefaultOptions) > 0 && runtime != "apptainer" && runtime != "singularity" {
		bad("Site.SingularityDefaultOptions", "is for the apptainer and singularity runtimes; Site.ContainerRuntime is %q", runtime)
	}
	if len(p.EnrootDefaultOptions) > 0 && runtime != "enroot" {
		bad("Site.EnrootDefaultOptions", "is for the enroot runtime; Site.ContainerRuntime is %q", runtime)
	}
}

func (p *Plugin) flavorNames() []string { return slices.Sorted(maps.Keys(p.Flavors)) }

// imagePrefix checks an image prefix: printable ASCII without spaces,
// quotes, backslashes or '$', as it becomes part of an image argument.
func imagePrefix(s string) error {
	for _, r := range s {
		if r <= ' ' || r > '~' || strings.ContainsRune(`'"\$`+"`", r) {
			return fmt.Errorf("must be printable ASCII without spaces, quotes, backslashes, '$' or '`', got %q", s)
		}
	}
	return nil
}

// MemoryBytes reads MemoryDefault as interLink does: a number of bytes, or
// a number followed by K, M or G (or KB, MB, GB; any case), in powers of
// 1024. Empty is 0, no default.
func (f *Flavor) MemoryBytes() (int64, error) {
	s := strings.ToUpper(strings.TrimSpace(f.MemoryDefault))
	if s == "" {
		return 0, nil
	}
	unit := int64(1)
	num := strings.TrimSuffix(s, "B")
	if num == s || len(num) > 0 && strings.ContainsAny(num[len(num)-1:], "KMG") {
		switch num[len(num)-1] {
		case 'K':
			unit, num = 1<<10, num[:len(num)-1]
		case 'M':
			unit, num = 1<<20, num[:len(num)-1]
		case 'G':
			unit, num = 1<<30, num[:len(num)-1]
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want a number of bytes, or one with K, M or G (16G, 32000M), got %q", f.MemoryDefault)
	}
	if n > maxMemoryDefault/unit {
		return 0, fmt.Errorf("%q is more than 1 PiB", f.MemoryDefault)
	}
	return n * unit, nil
}
