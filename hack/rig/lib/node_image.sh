#!/usr/bin/env bash
# shellcheck disable=SC2034 # constants read by the other files
# The node's images, made here and imported into containerd, so that nothing
# is ever pulled: the pod sandbox, the pause image of hack/tools/images (the
# one `make images` builds, static Go from hack/tools/pause), and the rig's
# busybox directory (lib/image.sh) as a one-layer OCI image archive whose
# layer is a tar with fixed owners and times, so the same files give the
# same digests.
#
# node_image_import takes any OCI archive of `make images` (CoreDNS too;
# the e2e tests import their sluice-tunnel) the same way: an archive whose index.json names the image
# in io.containerd.image.name.
set -euo pipefail

NODE_IMAGE_DIR="${RIG_DIR}/images/oci"
NODE_PAUSE_IMAGE=localhost/sluice-rig/pause:v1
NODE_BUSYBOX_IMAGE=sluice-rig.local/busybox:v1
NODE_COREDNS_IMAGE=localhost/sluice-rig/coredns:v1.15.0

# oci_blob DIR FILE: moves FILE into DIR/blobs/sha256 under its digest and
# prints "sha256:HEX SIZE".
oci_blob() {
	local dir="$1" file="$2" hex size
	hex="$(sha256sum "${file}" | cut -d' ' -f1)"
	size="$(stat -c %s "${file}")"
	install -d -m 0755 "${dir}/blobs/sha256"
	mv -f "${file}" "${dir}/blobs/sha256/${hex}"
	printf 'sha256:%s %s\n' "${hex}" "${size}"
}

# repro_tar DIR OUT FILE...: a tar of FILE... under DIR whose bytes depend on
# their content only (names sorted, owner root, time 0).
repro_tar() {
	local dir="$1" out="$2"
	shift 2
	tar --format=gnu --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
		-C "${dir}" -cf "${out}" "$@"
}

# oci_archive REF ROOTFS USER OUT ENTRYPOINT...: a one-layer OCI image
# archive of ROOTFS named REF, running ENTRYPOINT as USER.
oci_archive() {
	local ref="$1" rootfs="$2" user="$3" out="$4"
	shift 4
	local work layer config manifest entry arg
	work="$(mktemp -d)"
	repro_tar "${rootfs}" "${work}/layer" .
	read -r layer layer_size < <(oci_blob "${work}" "${work}/layer")
	entry=""
	for arg in "$@"; do
		entry+="${entry:+,}\"${arg}\""
	done
	printf '{"architecture":"amd64","os":"linux","config":{"User":"%s","Env":["PATH=/usr/local/bin:/usr/bin:/bin"],"Entrypoint":[%s]},"rootfs":{"type":"layers","diff_ids":["%s"]}}' \
		"${user}" "${entry}" "${layer}" >"${work}/config"
	read -r config config_size < <(oci_blob "${work}" "${work}/config")
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"%s","size":%s}]}' \
		"${config}" "${config_size}" "${layer}" "${layer_size}" >"${work}/manifest"
	read -r manifest manifest_size < <(oci_blob "${work}" "${work}/manifest")
	printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
		"${manifest}" "${manifest_size}" "${ref}" "${ref##*:}" >"${work}/index.json"
	printf '{"imageLayoutVersion":"1.0.0"}' >"${work}/oci-layout"
	repro_tar "${work}" "${out}.tmp" oci-layout index.json blobs
	mv -f "${out}.tmp" "${out}"
	rm -rf "${work}"
}

# node_tool_archives DIR: the pause image (NODE_PAUSE_IMAGE) and CoreDNS's
# (NODE_COREDNS_IMAGE, of the binary hack/tools/build.sh builds: cold, about
# two minutes) as DIR/pause.tar and DIR/coredns.tar, built by
# hack/tools/images like `make images` does (DIR/images.txt names them).
node_tool_archives() {
	local dir="$1" repo coredns ref
	repo="$(cd "${RIG_SRC_DIR}/../.." && pwd)"
	coredns="$("${RIG_SRC_DIR}/../tools/build.sh" coredns)" || die "node: hack/tools/build.sh coredns failed"
	(cd "${repo}" && go run ./hack/tools/images -out "${dir}" -images pause -coredns "${coredns}" >/dev/null) ||
		die "node: go run ./hack/tools/images -images pause -coredns ${coredns} failed"
	for ref in "${NODE_PAUSE_IMAGE}" "${NODE_COREDNS_IMAGE}"; do
		grep -q "^${ref} " "${dir}/images.txt" || die "node: ${dir}/images.txt does not name ${ref}"
	done
}

# node_image_import ARCHIVE REF: imports ARCHIVE into containerd's k8s.io
# namespace unless REF is there already with the archive's manifest.
node_image_import() {
	local archive="$1" ref="$2" want have
	want="$(tar -xOf "${archive}" index.json | grep -o '"digest": *"sha256:[0-9a-f]*"' | head -n 1 | grep -o 'sha256:[0-9a-f]*')"
	have="$(node_ctr images ls "name==${ref}" 2>/dev/null | awk -v r="${ref}" '$1 == r {print $3}')"
	if [[ -n "${want}" && "${have}" == "${want}" ]]; then
		return 0
	fi
	node_ctr images import "${archive}" >/dev/null || die "node: ctr images import ${archive} failed"
	log "node: imported ${ref} (${want})"
}

NODE_IMAGES_DONE=no

# node_images_up makes the archives and imports them (containerd running),
# once per run.
node_images_up() {
	[[ "${NODE_IMAGES_DONE}" == no ]] || return 0
	install -d -m 0755 "${NODE_IMAGE_DIR}"
	node_tool_archives "${NODE_IMAGE_DIR}"
	oci_archive "${NODE_BUSYBOX_IMAGE}" "${RIG_IMAGE_DIR}" 0:0 "${NODE_IMAGE_DIR}/busybox.tar" /bin/sh
	node_image_import "${NODE_IMAGE_DIR}/pause.tar" "${NODE_PAUSE_IMAGE}"
	node_image_import "${NODE_IMAGE_DIR}/coredns.tar" "${NODE_COREDNS_IMAGE}"
	node_image_import "${NODE_IMAGE_DIR}/busybox.tar" "${NODE_BUSYBOX_IMAGE}"
	NODE_IMAGES_DONE=yes
}
