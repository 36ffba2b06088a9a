# sluice — `make demo` runs sluice end to end on the local rig, `make test`
# runs every test. Both set up what they need on a fresh Debian machine (as root).

GO      ?= go
RIG     := hack/rig/rig.sh
PKGS    := ./...
SCRIPTS := $(shell find hack -name '*.sh')

IMAGES  ?= bin/images
RELEASE ?= bin/release
COMMA   := ,
# E2E_PARALLEL: how many of the e2e tests marked parallel (test/e2e: their
# own namespace, node and jobs, nothing of the site's shared) run at once,
# after the serial ones. The rig's Slurm node has 4 CPUs.
E2E_PARALLEL ?= 4
VERSION ?=

.PHONY: test unit rig-test e2e vet lint fuzz images release helm kubectl schema rig-up rig-down rig-status demo demo-slurm

## test: bring the rig up, then vet, lint, and every test: the unit tests and
## the tests against the rig, in one run with the race detector on, then the
## end-to-end tests of sluice-vk against the rig's API server and Slurm.
test: rig-up vet lint helm kubectl
	$(GO) test -race -tags rig -count=1 -timeout 30m $(PKGS)
	$(GO) test -tags e2e -count=1 -timeout 40m -parallel $(E2E_PARALLEL) -v ./test/e2e/

## e2e: the end-to-end tests alone (the rig must be up).
e2e:
	$(GO) test -tags e2e -count=1 -timeout 40m -parallel $(E2E_PARALLEL) -v ./test/e2e/

## unit: the tests that need no rig (race detector on).
unit: helm
	$(GO) test -race -count=1 $(PKGS)

## rig-test: tests against the rig's real sshd, Slurm and Charliecloud.
rig-test:
	$(GO) test -tags rig -count=1 -timeout 30m $(PKGS)

## vet: the rig tag adds files to every package and takes none away, so
## vetting with it covers the untagged build too.
vet:
	$(GO) vet -tags rig $(PKGS)
	$(GO) vet -tags e2e ./test/e2e/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	shellcheck $(SCRIPTS)

## schema: the config subtree of the chart's values schema, from the
## configuration's Go types (internal/config: TestChartSchemaMatchesTypes).
schema:
	$(GO) generate ./internal/config/

## helm: the helm the chart's tests (test/chart) and the e2e tests use, built
## once from its Go module (hack/tools/helm) into /var/cache/sluice.
helm:
	hack/tools/build.sh helm >/dev/null

## kubectl: the kubectl the e2e tests of exec, attach and port-forward run,
## built once from its Go module into /var/cache/sluice (Debian 12's is v1.20).
kubectl:
	hack/tools/build.sh kubectl >/dev/null

## fuzz: a short run of every fuzz target (the seed corpora run in `unit`).
fuzz:
	hack/fuzz.sh 30s

## images: the OCI image archives (ctr -n k8s.io images import FILE) of
## sluice-tunnel, sluice-vk with sluice-relay, and the rig's pause and
## coredns, into $(IMAGES), built without a container engine or a registry;
## prints NAME DIGEST FILE for each. The same source gives the same digests.
## VERSION=v1.2.3 stamps a release; else the tag of HEAD or v0.0.0-dev+REV.
## PUSH=registry.example.org/sluice pushes sluice-vk and sluice-tunnel there
## (credentials of $$DOCKER_CONFIG/config.json: crane auth login; PUSH_CA=FILE
## adds a CA), instead of building the rig's images.
images:
	$(GO) run ./hack/tools/images -out $(IMAGES) $(if $(VERSION),-version $(VERSION)) \
		$(if $(PUSH),-images sluice-vk$(COMMA)sluice-tunnel -push $(PUSH) $(if $(PUSH_CA),-push-ca $(PUSH_CA)),-coredns "$$(hack/tools/build.sh coredns)")

## release: what a release ships, into $(RELEASE), reproducibly (every date
## SOURCE_DATE_EPOCH, else HEAD's): sluice-vk and sluice-tunnel as one OCI
## index each of linux/amd64 and linux/arm64 (NAME/, an OCI layout for crane
## push, and NAME.tar for skopeo's oci-archive:), sluice-vk carrying
## sluice-relay for amd64, arm64 and ppc64le; an SPDX SBOM per image; the
## chart (helm package); SHA256SUMS. VERSION and PUSH as for images.
release: helm
	rm -rf $(RELEASE)
	$(GO) run ./hack/tools/images -release -out $(RELEASE) -helm "$$(hack/tools/build.sh path helm)" \
		$(if $(VERSION),-version $(VERSION)) $(if $(PUSH),-push $(PUSH)) $(if $(PUSH_CA),-push-ca $(PUSH_CA))

rig-up:
	$(RIG) up

rig-down:
	$(RIG) down

rig-status:
	$(RIG) status

## demo: bring the rig up, helm install sluice on it, run a pod as a Slurm
## job with both tunnels, show kubectl's view, helm uninstall and check that
## nothing is left (hack/demo/helm-demo.sh alone uses the rig as it is).
demo: rig-up
	hack/demo/helm-demo.sh

## demo-slurm: the same pod as a Slurm job straight through the slurm package.
demo-slurm: rig-up
	$(GO) run ./hack/demo
