# Builds the cluster's upstream binaries from the Go module proxy, into $E2E_CACHE/bin.
# Sourced by cluster.sh. Each set is built once: a stamp file marks a complete build, so a
# second run costs nothing and an interrupted one starts again.

# module_dir prints where the private module cache unpacked module $1.
module_dir() {
	(cd "$E2E_CACHE/src" && goenv go mod download -json "$1") | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p'
}

# copy_module copies module $1 to $2 so that its own go.mod, go.sum and replaces apply.
copy_module() {
	local dir
	dir=$(module_dir "$1")
	[ -n "$dir" ] || die "module $1 not downloaded"
	rm -rf "$2" && mkdir -p "$(dirname "$2")"
	cp -a "$dir" "$2" && chmod -R u+w "$2"
}

build_k8s() {
	[ -f "$BIN_K8S/.done" ] && return 0
	log "building Kubernetes $K8S_VERSION and etcd $ETCD_VERSION (cold: several minutes)"
	local src=$E2E_CACHE/src/k8s-$K8S_VERSION
	rm -rf "$src" && mkdir -p "$src/etcd"
	printf 'module example.invalid/clusterbuild\n\ngo 1.26.0\n' >"$src/go.mod"
	local kdir
	kdir=$(module_dir "k8s.io/kubernetes@$K8S_VERSION")
	[ -n "$kdir" ] || die "k8s.io/kubernetes@$K8S_VERSION not downloaded"
	# Kubernetes replaces its staging modules with ./staging, which a module zip lacks:
	# point each at its published version instead.
	{
		echo 'replace ('
		grep -E '^\s+k8s.io/[a-z0-9-]+ => ./staging' "$kdir/go.mod" | awk -v v="$K8S_STAGING_VERSION" '{print "\t" $1 " => " $1 " " v}'
		echo ')'
		echo "require k8s.io/kubernetes $K8S_VERSION"
		echo "require go.etcd.io/etcd/server/v3 $ETCD_VERSION"
	} >>"$src/go.mod"
	cat >"$src/tools.go" <<'GO'
//go:build tools

// Package tools pins the Kubernetes commands this module builds.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
	cat >"$src/etcd/main.go" <<'GO'
// Command etcd runs a single-member etcd on loopback, embedded, for the e2e cluster.
package main

import (
	"flag"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dataDir := flag.String("data-dir", "", "data directory")
	listen := flag.String("listen", "127.0.0.1:2379", "client address")
	peer := flag.String("peer", "127.0.0.1:2380", "peer address")
	flag.Parse()

	cfg := embed.NewConfig()
	cfg.Dir = *dataDir
	cfg.LogLevel = "warn"
	// etcd's own command sets this default from its flags, not embed.NewConfig: at zero,
	// every request is logged as a slow one (most of etcd's work, and its log, in a run).
	cfg.WarningUnaryRequestDuration = embed.DefaultWarningUnaryRequestDuration
	// A throwaway test cluster: durability is not worth the fsync latency.
	cfg.UnsafeNoFsync = true
	client := url.URL{Scheme: "http", Host: *listen}
	peerURL := url.URL{Scheme: "http", Host: *peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.Name + "=" + peerURL.String()
	cfg.ListenMetricsUrls = nil

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("starting etcd: %v", err)
	}
	<-e.Server.ReadyNotify()
	log.Printf("etcd ready on %s", client.String())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
	case err := <-e.Err():
		log.Printf("etcd: %v", err)
	}
	e.Close()
}
GO
	(cd "$src" && goenv go mod tidy) || die "go mod tidy of the Kubernetes build module failed"
	local pkg=k8s.io/component-base/version
	local ldflags="-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=36 -X $pkg.gitTreeState=clean"
	rm -rf "$BIN_K8S.tmp" && mkdir -p "$BIN_K8S.tmp"
	(cd "$src" && goenv go build -trimpath -ldflags "$ldflags" -o "$BIN_K8S.tmp/" ./etcd \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubectl) ||
		die "building Kubernetes failed"
	touch "$BIN_K8S.tmp/.done" && rm -rf "$BIN_K8S" && mv "$BIN_K8S.tmp" "$BIN_K8S"
}

build_tekton() {
	[ -f "$BIN_TEKTON/.done" ] && return 0
	log "building Tekton Pipelines $TEKTON_VERSION (cold: a few minutes)"
	copy_module "github.com/tektoncd/pipeline@$TEKTON_VERSION" "$TEKTON_SRC"
	rm -rf "$BIN_TEKTON.tmp" && mkdir -p "$BIN_TEKTON.tmp"
	(cd "$TEKTON_SRC" && goenv go build -trimpath -ldflags "-s -w" -o "$BIN_TEKTON.tmp/" \
		./cmd/controller ./cmd/webhook ./cmd/entrypoint ./cmd/nop ./cmd/workingdirinit) ||
		die "building Tekton failed"
	touch "$BIN_TEKTON.tmp/.done" && rm -rf "$BIN_TEKTON" && mv "$BIN_TEKTON.tmp" "$BIN_TEKTON"
}

build_addons() {
	[ -f "$BIN_ADDONS/.done" ] && return 0
	log "building csi-provisioner $CSI_PROVISIONER_VERSION and local-path-provisioner $LOCAL_PATH_VERSION"
	rm -rf "$BIN_ADDONS.tmp" && mkdir -p "$BIN_ADDONS.tmp"
	local csi=$E2E_CACHE/src/external-provisioner-$CSI_PROVISIONER_VERSION
	copy_module "github.com/kubernetes-csi/external-provisioner/v5@$CSI_PROVISIONER_VERSION" "$csi"
	# Module zips drop vendor/, which go.mod's go version would otherwise make the default.
	(cd "$csi" && goenv go build -mod=mod -trimpath -ldflags "-s -w" -o "$BIN_ADDONS.tmp/" ./cmd/csi-provisioner) ||
		die "building csi-provisioner failed"
	local lp=$E2E_CACHE/src/local-path-provisioner-$LOCAL_PATH_VERSION
	copy_module "github.com/rancher/local-path-provisioner@$LOCAL_PATH_VERSION" "$lp"
	(cd "$lp" && goenv go build -mod=mod -trimpath -ldflags "-s -w" -o "$BIN_ADDONS.tmp/local-path-provisioner" .) ||
		die "building local-path-provisioner failed"
	touch "$BIN_ADDONS.tmp/.done" && rm -rf "$BIN_ADDONS" && mv "$BIN_ADDONS.tmp" "$BIN_ADDONS"
}

# build_tool DEST MODULE@VERSION PACKAGE NAME builds a module's command from the module
# proxy into DEST/NAME, whole or not at all (DEST.tmp first), leaving the module's
# source in $src for the caller to take more from before finish_tool DEST.
build_tool() {
	rm -rf "$1.tmp" && mkdir -p "$1.tmp"
	src=$E2E_CACHE/src/$(basename "$1")
	copy_module "$2" "$src"
	(cd "$src" && goenv go build -mod=mod -trimpath -ldflags "-s -w" -o "$1.tmp/$4" "$3") ||
		die "building $2 failed"
}

finish_tool() {
	touch "$1.tmp/.done" && rm -rf "$1" && mv "$1.tmp" "$1"
}

# build_registry builds the image registry (distribution, as Docker's registry:2) that
# the cluster pulls images from and that builds push the images they make to.
build_registry() {
	[ -f "$BIN_REGISTRY/.done" ] && return 0
	log "building the registry (distribution $REGISTRY_VERSION)"
	build_tool "$BIN_REGISTRY" "github.com/distribution/distribution/v3@$REGISTRY_VERSION" ./cmd/registry registry
	finish_tool "$BIN_REGISTRY"
}

# build_kwok builds kwok (simulated nodes, for make bench-scale) from the module proxy, with
# its stage definitions beside it. Not part of build_all: only the scale benchmark uses it.
build_kwok() {
	[ -f "$BIN_KWOK/.done" ] && return 0
	mkdir -p "$E2E_CACHE/src" "$E2E_CACHE/go"
	[ -f "$E2E_CACHE/src/go.mod" ] || printf 'module example.invalid/download\n\ngo 1.26.0\n' >"$E2E_CACHE/src/go.mod"
	log "building kwok $KWOK_VERSION"
	build_tool "$BIN_KWOK" "sigs.k8s.io/kwok@$KWOK_VERSION" ./cmd/kwok kwok
	cp -a "$src/kustomize/stage" "$BIN_KWOK.tmp/stage"
	finish_tool "$BIN_KWOK"
}

# build_containerd builds the node's container runtime: containerd, its runc shim and ctr.
# Debian's containerd (1.6) predates the CRI that Kubernetes 1.36 expects (no
# RuntimeConfig, so the kubelet guesses the cgroup driver), and under the load of both
# e2e suites its shim now and then dropped a container's start ("ttrpc: closed"). The
# shim must sit beside containerd or first on its PATH: up.sh puts this directory first.
build_containerd() {
	[ -f "$BIN_CONTAINERD/.done" ] && return 0
	log "building containerd $CONTAINERD_VERSION"
	rm -rf "$BIN_CONTAINERD.tmp" && mkdir -p "$BIN_CONTAINERD.tmp"
	local src=$E2E_CACHE/src/containerd-$CONTAINERD_VERSION
	copy_module "github.com/containerd/containerd/v2@$CONTAINERD_VERSION" "$src"
	# Without cgo the btrfs snapshotter drops out by itself; the others are tagged out.
	(cd "$src" && goenv go build -mod=mod -trimpath -tags "no_btrfs no_devmapper no_zfs" \
		-ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" \
		-o "$BIN_CONTAINERD.tmp/" ./cmd/containerd ./cmd/containerd-shim-runc-v2 ./cmd/ctr) ||
		die "building containerd failed"
	finish_tool "$BIN_CONTAINERD"
}

build_all() {
	mkdir -p "$E2E_CACHE/src" "$E2E_CACHE/go"
	[ -f "$E2E_CACHE/src/go.mod" ] || printf 'module example.invalid/download\n\ngo 1.26.0\n' >"$E2E_CACHE/src/go.mod"
	build_k8s
	build_tekton
	build_addons
	build_registry
	build_containerd
}
