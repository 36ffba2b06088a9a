package jobscript

import "strings"

// image gives the image a container runs: its name with the pod's image
// root (AnnotationImageRoot) or else the site's image prefix
// (Site.ImagePrefix) before it, as interLink's plugin does, unless the name
// is an absolute path or starts with the prefix already. The runtime then
// checks the result (Runtime.image).
func (b *podBuilder) image(name string) string {
	if b.imageRootSet {
		return withImageRoot(name, b.imageRoot, b.rt)
	}
	return withImageRoot(name, b.site.ImagePrefix, b.rt)
}

func withImageRoot(name, root string, rt Runtime) string {
	if root == "" || rt == RuntimeNone || strings.HasPrefix(name, "/") || strings.HasPrefix(name, root) {
		return name
	}
	return root + name
}
