package slurm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/sluice-hpc/sluice/internal/jobscript"
)

// maxAnnotationsFile bounds what Submitted reads: the API server holds a
// pod's annotations to 256 KiB, which JSON's escapes may make up to six
// times longer.
const maxAnnotationsFile = 6 << 18

// writeAnnotations keeps, in the job directory dir, the annotations the job
// is made with (AnnotationsFile).
func (c *Client) writeAnnotations(ctx context.Context, dir string, a map[string]string) error {
	data, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("encode %s: %w", jobscript.AnnotationsFile, err)
	}
	if err := c.Site.WriteFile(ctx, path.Join(dir, jobscript.AnnotationsFile), append(data, '\n'), fileMode); err != nil {
		return fmt.Errorf("write %s: %w", jobscript.AnnotationsFile, err)
	}
	return nil
}

// Submitted gives back the annotations the job of ref was made with, as
// Submit kept them in its job directory, or nil when it kept none: a job
// submitted by a version of sluice before them, or none submitted yet. A
// file that does not hold them (the pod's jobs run as the site user and
// may write it) is logged and taken as none: the pod's annotations are
// then checked as they are now, as for such an old job.
func (c *Client) Submitted(ctx context.Context, ref JobRef) (map[string]string, error) {
	file := path.Join(ref.Dir, jobscript.AnnotationsFile)
	data, err := c.Site.ReadAt(ctx, file, 0, maxAnnotationsFile+1)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", jobscript.AnnotationsFile, err)
	}
	var a map[string]string
	if len(data) > maxAnnotationsFile {
		err = fmt.Errorf("longer than %d bytes", maxAnnotationsFile)
	} else {
		err = json.Unmarshal(data, &a)
	}
	if err != nil {
		c.logger().Warn("slurm: the annotations the job was made with are unreadable: the pod's are taken as they are", "file", file, "error", err)
		return nil, nil
	}
	if a == nil {
		a = map[string]string{} // "null": made with none
	}
	return a, nil
}
