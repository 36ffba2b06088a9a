package jobscript

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// The placeholders of a job comment template (Site.JobComment): the pod's
// namespace and name.
const (
	commentNamespace = "{namespace}"
	commentName      = "{name}"
)

// commentText is what a job's comment may hold. It is the value of an
// #SBATCH line, which sbatch splits on spaces and quotes, and squeue and
// sacct show it to every user of the site. Namespaces and pod names are DNS
// names: they always fit.
var commentText = regexp.MustCompile(`^[A-Za-z0-9._/@+=:-]*$`)

// maxCommentTemplate is the longest template taken: a comment is a label,
// not a document.
const maxCommentTemplate = 256

// checkCommentTemplate checks a job comment template: at most
// maxCommentTemplate bytes of commentText, with {namespace} and {name} as
// the only placeholders.
func checkCommentTemplate(tmpl string) error {
	if len(tmpl) > maxCommentTemplate {
		return fmt.Errorf("%d bytes long; at most %d", len(tmpl), maxCommentTemplate)
	}
	rest := strings.NewReplacer(commentNamespace, "", commentName, "").Replace(tmpl)
	if strings.ContainsAny(rest, "{}") {
		return fmt.Errorf("%q: the only placeholders are %s and %s", tmpl, commentNamespace, commentName)
	}
	if !commentText.MatchString(rest) {
		return fmt.Errorf("%q: want letters, digits, ._/@+=:- and the placeholders %s and %s only", tmpl, commentNamespace, commentName)
	}
	return nil
}

// jobComment is the comment of the job of pod namespace/name by tmpl, a
// checked template; "" gives none.
func jobComment(tmpl, namespace, name string) (string, error) {
	if err := checkCommentTemplate(tmpl); err != nil {
		return "", fmt.Errorf("job comment %w", err)
	}
	c := strings.NewReplacer(commentNamespace, namespace, commentName, name).Replace(tmpl)
	if !commentText.MatchString(c) {
		return "", errors.New("job comment: the pod's namespace or name holds a character a comment cannot")
	}
	return c, nil
}
