package main

import (
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The SPDX 2.3 JSON document an SBOM is (https://spdx.github.io/spdx-spec/v2.3/),
// with the fields this generator fills.
type (
	spdxDoc struct {
		SPDXVersion       string        `json:"spdxVersion"`
		DataLicense       string        `json:"dataLicense"`
		SPDXID            string        `json:"SPDXID"`
		Name              string        `json:"name"`
		DocumentNamespace string        `json:"documentNamespace"`
		CreationInfo      spdxCreation  `json:"creationInfo"`
		DocumentDescribes []string      `json:"documentDescribes"`
		Packages          []spdxPackage `json:"packages"`
		Relationships     []spdxRel     `json:"relationships"`
	}
	spdxCreation struct {
		Created  string   `json:"created"`
		Creators []string `json:"creators"`
	}
	spdxPackage struct {
		Name             string        `json:"name"`
		SPDXID           string        `json:"SPDXID"`
		VersionInfo      string        `json:"versionInfo,omitempty"`
		DownloadLocation string        `json:"downloadLocation"`
		FilesAnalyzed    bool          `json:"filesAnalyzed"`
		PrimaryPurpose   string        `json:"primaryPackagePurpose,omitempty"`
		Comment          string        `json:"comment,omitempty"`
		ExternalRefs     []spdxExtRef  `json:"externalRefs,omitempty"`
		Checksums        []spdxSummary `json:"checksums,omitempty"`
	}
	spdxExtRef struct {
		Category string `json:"referenceCategory"`
		Type     string `json:"referenceType"`
		Locator  string `json:"referenceLocator"`
	}
	spdxSummary struct {
		Algorithm string `json:"algorithm"`
		Value     string `json:"checksumValue"`
	}
	spdxRel struct {
		Element string `json:"spdxElementId"`
		Type    string `json:"relationshipType"`
		Related string `json:"relatedSpdxElement"`
	}
)

// spdxUnsafe is what an SPDX identifier may not hold.
var spdxUnsafe = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

func spdxID(parts ...string) string {
	return "SPDXRef-" + spdxUnsafe.ReplaceAllString(strings.Join(parts, "-"), "-")
}

// spdxDocument is the SBOM of the image (an index) named ref with digest,
// from the build information Go writes into each binary (what `go version
// -m` prints): the image, each binary per platform, the Go standard
// library, and every module they link, deduplicated. The same binaries
// give the same document: its date is the source's and its namespace
// names the digest.
func spdxDocument(title, ref, digest string, s stamp, bins []builtBinary) ([]byte, error) {
	imageID := spdxID("image", title)
	doc := spdxDoc{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT",
		Name:              ref,
		DocumentNamespace: defaultSource + "/spdx/" + title + "/" + digest,
		CreationInfo: spdxCreation{Created: s.created.UTC().Format(time.RFC3339),
			Creators: []string{"Tool: sluice-hack-tools-images", "Organization: sluice"}},
		DocumentDescribes: []string{imageID},
	}
	repo, _, _ := strings.Cut(ref, ":")
	doc.Packages = append(doc.Packages, spdxPackage{
		Name: title, SPDXID: imageID, VersionInfo: s.version, DownloadLocation: "NOASSERTION",
		PrimaryPurpose: "CONTAINER",
		ExternalRefs: []spdxExtRef{{Category: "PACKAGE-MANAGER", Type: "purl",
			Locator: "pkg:oci/" + title + "@" + strings.Replace(digest, ":", "%3A", 1) + "?repository_url=" + repo}},
		Checksums: []spdxSummary{{Algorithm: "SHA256", Value: strings.TrimPrefix(digest, "sha256:")}},
	})
	seen := map[string]bool{}
	addModule := func(from, path, version, sum string) {
		id := spdxID("module", path, version)
		if !seen[id] {
			seen[id] = true
			p := spdxPackage{Name: path, SPDXID: id, VersionInfo: version, DownloadLocation: "NOASSERTION",
				PrimaryPurpose: "LIBRARY",
				ExternalRefs: []spdxExtRef{{Category: "PACKAGE-MANAGER", Type: "purl",
					Locator: "pkg:golang/" + path + "@" + version}}}
			if sum != "" {
				p.Comment = "go.sum " + sum
			}
			doc.Packages = append(doc.Packages, p)
		}
		doc.Relationships = append(doc.Relationships, spdxRel{from, "DEPENDS_ON", id})
	}
	for _, b := range bins {
		info, err := buildinfo.ReadFile(b.file)
		if err != nil {
			return nil, fmt.Errorf("sbom %s: %s: %w", title, b.pkg, err)
		}
		id := spdxID("binary", b.path, b.arch)
		doc.Packages = append(doc.Packages, spdxPackage{
			Name: b.path, SPDXID: id, VersionInfo: s.version, DownloadLocation: "NOASSERTION",
			PrimaryPurpose: "APPLICATION", Comment: "linux/" + b.arch + ", package " + info.Path,
			ExternalRefs: []spdxExtRef{{Category: "PACKAGE-MANAGER", Type: "purl",
				Locator: "pkg:golang/" + info.Path + "@" + s.version + "?goarch=" + b.arch + "&goos=linux"}},
		})
		doc.Relationships = append(doc.Relationships, spdxRel{imageID, "CONTAINS", id})
		addModule(id, "stdlib", strings.TrimPrefix(info.GoVersion, "go"), "")
		for _, d := range info.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			addModule(id, d.Path, d.Version, d.Sum)
		}
	}
	// The image and the binaries first, as built; then the modules sorted.
	head := 1 + len(bins)
	slices.SortFunc(doc.Packages[head:], func(a, b spdxPackage) int { return strings.Compare(a.SPDXID, b.SPDXID) })
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("sbom %s: %w", title, err)
	}
	return append(out, '\n'), nil
}
