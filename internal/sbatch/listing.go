package sbatch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"regexp"
)

// The site's `sbatch --help` and `sbatch --usage` are read as untrusted
// input: bounded, line by line, and only what matches the narrow shapes
// below is taken.
const (
	// MaxListing bounds each of the outputs (22.05's help is 8 KiB).
	MaxListing = 256 << 10
	// maxSbatchOptions bounds the options one listing may name (22.05
	// has about 110).
	maxSbatchOptions = 1000
	// maxListingLine bounds one line; longer ones are skipped.
	maxListingLine = 4096
)

// listing is what a site's sbatch lists of itself.
type listing struct {
	long  map[string]argKind
	short map[byte]string
}

// helpLine matches an option line of `sbatch --help`: little indentation
// (descriptions wrap far deeper, and may start with an option's name),
// then "-a, --array=indexes", "-B  --extra-node-info=S", "--nice[=value]"
// or "--hold".
var helpLine = regexp.MustCompile(`^ {1,8}(?:-([A-Za-z0-9]),? +)?--([a-z][a-z0-9-]{0,62})(\[=|=|\s|$)`)

// usageItem matches an option of `sbatch --usage`: "[--mem=MB]",
// "[--nice[=value]]" or "[--hold]". One-letter items ("[-N nnodes]") do
// not say which long option they stand for and are not taken.
var usageItem = regexp.MustCompile(`\[--([a-z][a-z0-9-]{0,62})(\[=|=|\])`)

// parseSbatchListing reads the options of sbatch from its help and usage.
// A value written "--name=v" is required, "--name[=v]" optional. A name
// written bare takes none by usage's word; by help's it may still take one
// (22.05 lists "--container" bare, which needs a path), so a bare name of
// the help alone is taken as an optional value: "--name=v" and "--name"
// pass, and sbatch has the last word on which it wants.
func parseSbatchListing(help, usage []byte) (listing, error) {
	if len(help) > MaxListing || len(usage) > MaxListing {
		return listing{}, fmt.Errorf("sbatch help: more than %d bytes", MaxListing)
	}
	l := listing{long: map[string]argKind{}, short: map[byte]string{}}
	add := func(name string, k argKind) error {
		if _, ok := l.long[name]; !ok && len(l.long) == maxSbatchOptions {
			return fmt.Errorf("sbatch help: more than %d options", maxSbatchOptions)
		}
		prev, ok := l.long[name]
		switch {
		case !ok:
			l.long[name] = k
		case prev != k:
			// Help and usage disagree (22.05: "--propagate[=rlimits]"
			// and "[--propagate]"): both forms pass.
			l.long[name] = argOptional
		}
		return nil
	}
	err := eachLine(help, func(line []byte) error {
		m := helpLine.FindSubmatch(line)
		if m == nil {
			return nil
		}
		name := string(m[2])
		if err := add(name, listedKind(m[3], argOptional)); err != nil {
			return err
		}
		if len(m[1]) == 1 {
			l.short[m[1][0]] = name
		}
		return nil
	})
	if err != nil {
		return listing{}, err
	}
	err = eachLine(usage, func(line []byte) error {
		for _, m := range usageItem.FindAllSubmatch(line, -1) {
			if err := add(string(m[1]), listedKind(m[2], argNone)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return listing{}, err
	}
	if len(l.long) == 0 {
		return listing{}, errors.New("sbatch help: no options found")
	}
	return l, nil
}

// listedKind is the value rule that what follows a listed name gives:
// "[=" optional, "=" required, anything else bare.
func listedKind(after []byte, bare argKind) argKind {
	switch string(after) {
	case "[=":
		return argOptional
	case "=":
		return argRequired
	}
	return bare
}

// eachLine calls f with each line of data, skipping lines longer than
// maxListingLine.
func eachLine(data []byte, f func([]byte) error) error {
	s := bufio.NewScanner(bytes.NewReader(data))
	s.Buffer(make([]byte, 0, 1024), MaxListing+1)
	for s.Scan() {
		if len(s.Bytes()) > maxListingLine {
			continue
		}
		if err := f(s.Bytes()); err != nil {
			return err
		}
	}
	return s.Err()
}
