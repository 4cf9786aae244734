#!/usr/bin/env bash
# The e2e cluster: a real single-node Kubernetes with Tekton and CSI storage, offline.
#
#   cluster.sh up           build what is missing, start the cluster (idempotent)
#   cluster.sh down         stop everything, restore the host (idempotent)
#   cluster.sh status       exit 0 if the cluster is up and healthy
#   cluster.sh check-clean  fail unless the host is as it was before up
#   cluster.sh kubeconfig   print the kubeconfig path the tests use
#   cluster.sh registry     print the address of the cluster's image registry
#   cluster.sh pod-apiserver  print the address pods reach the API server at (no Service
#                           proxy here: KUBERNETES_SERVICE_HOST/PORT of an in-cluster client)
#   cluster.sh kubectl ARGS kubectl, as the cluster's admin
#   cluster.sh ctr ARGS     the node's ctr on its containerd, in the kubelet's namespace
#   cluster.sh build        only build (binaries and images)
#   cluster.sh load         import bin/images/*.tar into the running cluster
#   cluster.sh restart-apiserver   stop and start the running cluster's kube-apiserver
#   cluster.sh restart-kubelet     the same of its kubelet (the pods run on)
#   cluster.sh restart-containerd  the same of its containerd (the containers run on)
#   cluster.sh compact-etcd        compact etcd's history at its current revision
#   cluster.sh stop-registry       stop the builds' image registry; start-registry starts it
#   cluster.sh pid DAEMON          print the process ID of one of the cluster's daemons
#   cluster.sh kwok         build kwok (cached) and print KWOK_BIN=... KWOK_STAGES=... for
#                           make bench-scale
#   cluster.sh test         make e2e: up if needed, go test -tags e2e and the atc module's
#                           e2e (E2E_ATC=0: not those), then down and check-clean if it
#                           started the cluster; with E2E_KUBECONFIG set, only the tests,
#                           against that cluster
#
# See ../shared/docs/local-cluster.md (beside the repository's root) for the recipe and its
# reasons, README.md for use.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
for f in lib build pki up down check; do
	# shellcheck source=/dev/null
	source "$here/$f.sh"
done

DAEMONS="etcd kube-apiserver apiserver-bridge kube-controller-manager kube-scheduler registry private-registry containerd kubelet tekton-webhook tekton-controller labcsi csi-provisioner local-path-provisioner"

cluster_healthy() {
	local n
	for n in $DAEMONS; do
		[ -f "$E2E_STATE/pids/$n.pid" ] && ours "$(cat "$E2E_STATE/pids/$n.pid")" || return 1
	done
	KUBECTL get --raw /readyz >/dev/null 2>&1
}

need_root() { [ "$(id -u)" = 0 ] || die "the e2e cluster needs root (bridges, mounts, containerd, kubelet)"; }

cluster_build() {
	install_packages
	build_all
	build_tools
	mkdir -p "$E2E_CACHE/images"
	build_images
}

cluster_up() {
	need_root
	if cluster_healthy; then
		log "already up"
		echo "$E2E_KUBECONFIG_PATH"
		return 0
	fi
	if [ -d "$E2E_STATE" ]; then
		log "found a stale or broken cluster; tearing it down first"
		cluster_down
	fi
	local t0=$SECONDS
	cluster_build
	log "built in $((SECONDS - t0))s; starting"
	save_baseline
	mkdir -p "$E2E_STATE"
	# Whatever goes wrong from here on, put the machine back as it was (the kubelet
	# changes host sysctls; bridges, routes and mounts are ours to remove).
	trap 'rc=$?; trap - EXIT INT TERM; if [ $rc -ne 0 ]; then log "up failed; tearing down"; cluster_down; fi; exit $rc' EXIT
	trap 'exit 130' INT TERM
	local t1=$SECONDS
	make_pki
	write_configs
	setup_network
	start_registry
	start_control_plane
	start_node
	start_tekton
	start_storage
	cp "$E2E_STATE/pki/admin.kubeconfig" "$E2E_KUBECONFIG_PATH"
	trap - EXIT INT TERM
	log "up in $((SECONDS - t1))s (total $((SECONDS - t0))s); kubeconfig:"
	echo "$E2E_KUBECONFIG_PATH"
}

# load_images imports the project's images (bin/images/*.tar, from make runner-image) and
# the harness's own (the mock and git resources, rebuilt: a few seconds) into the running
# cluster, so that a cluster left up runs the code of this checkout.
load_images() {
	need_root
	cluster_healthy || die "the cluster is not up"
	build_tools
	build_images
	local tar
	for tar in "$E2E_CACHE"/images/*.tar "$REPO_ROOT"/bin/images/*.tar; do
		[ -f "$tar" ] || continue
		import_image "$tar"
		log "loaded $tar"
	done
}

# The main module's e2e tests and (unless E2E_ATC=0) the atc module's: the real fly
# against Concourse's web node, whose builds run on the same cluster. The two run at the
# same time: their tests mostly wait for pods, and the machine's cores idle meanwhile.
# The main module's output streams; the atc module's follows it, from a file. First, and
# alone, the one test that restarts the API server under everything else's feet.
ATC_TESTS_PID=
run_tests() {
	local rc=0 atc_log
	# The harness's own cluster has its registry; another cluster's is the caller's to give.
	if [ "$E2E_KUBECONFIG" = "$E2E_KUBECONFIG_PATH" ]; then
		export E2E_IMAGE_REGISTRY=${E2E_IMAGE_REGISTRY:-$REGISTRY_ADDR}
		export E2E_PRIVATE_REGISTRY=${E2E_PRIVATE_REGISTRY:-$PRIVATE_REGISTRY_ADDR} E2E_PRIVATE_REGISTRY_AUTH=${E2E_PRIVATE_REGISTRY_AUTH:-$PRIVATE_REGISTRY_USER:$PRIVATE_REGISTRY_PASSWORD}
	fi
	local alone='^TestApiserverRestart$'
	(cd "$REPO_ROOT" && "${GO:-go}" test -tags e2e -count=1 -v -timeout 10m -run "$alone" ./e2e) || rc=$?
	if [ "${E2E_ATC:-1}" != 0 ]; then
		atc_log=$(mktemp "${TMPDIR:-/tmp}/concourse-tekton-atc-e2e.XXXXXX")
		log "running the atc e2e tests (the web node and fly) against $E2E_KUBECONFIG; their output follows the main module's"
		# A session of its own, so that stop_atc_tests reaches the test binary.
		setsid make -C "$REPO_ROOT/atc" e2e GO="${GO:-go}" >"$atc_log" 2>&1 &
		ATC_TESTS_PID=$!
	fi
	log "running the e2e tests against $E2E_KUBECONFIG"
	# Four tests at a time (go test's default is one per core): they mostly wait for pods,
	# and on 2 cores four finish a third sooner than two. E2E_PARALLEL changes it.
	(cd "$REPO_ROOT" && "${GO:-go}" test -tags e2e -count=1 -v -timeout 65m -parallel "${E2E_PARALLEL:-4}" -skip "$alone" ./e2e/...) || rc=$?
	if [ -n "$ATC_TESTS_PID" ]; then
		wait "$ATC_TESTS_PID" || rc=$?
		ATC_TESTS_PID=
		log "the atc e2e tests' output:"
		cat "$atc_log"
		rm -f "$atc_log"
	fi
	return $rc
}

# stop_atc_tests stops the atc module's tests, if they still run (the main module's were
# interrupted): they stop their web node and Postgres on SIGTERM, which takes the test
# binary a while after make and go have gone, so it waits (a minute at most) until no
# process of the group is left.
stop_atc_tests() {
	[ -n "$ATC_TESTS_PID" ] || return 0
	kill -TERM -- "-$ATC_TESTS_PID" 2>/dev/null || true
	wait "$ATC_TESTS_PID" 2>/dev/null || true
	local i
	for ((i = 0; i < 300; i++)); do
		kill -0 -- "-$ATC_TESTS_PID" 2>/dev/null || break
		sleep 0.2
	done
	ATC_TESTS_PID=
}

cluster_test() {
	# Whatever ends the run, the atc module's tests go with it (the cluster's own trap,
	# below, does the same before tearing it down).
	trap 'rc=$?; trap - EXIT INT TERM; stop_atc_tests; exit $rc' EXIT
	trap 'exit 130' INT TERM
	if [ -n "${E2E_KUBECONFIG:-}" ]; then
		run_tests
		return
	fi
	need_root
	export E2E_KUBECONFIG=$E2E_KUBECONFIG_PATH
	if cluster_healthy; then
		log "using the running cluster; it stays up (make e2e-down stops it)"
		load_images
		run_tests
		return
	fi
	# Compile the tests before the cluster exists, so a compile error costs no cluster
	# and the cluster does not idle while they compile.
	(cd "$REPO_ROOT" && "${GO:-go}" test -tags e2e -c -o /dev/null ./e2e) || die "the e2e tests do not compile"
	if [ "${E2E_ATC:-1}" != 0 ]; then
		GO="${GO:-go}" "$REPO_ROOT/atc/build.sh" || die "the web node and fly do not build"
	fi
	# A failed up tears itself down. Once up, we stop it whatever happens, and prove
	# the machine is clean.
	cluster_up >/dev/null
	trap 'rc=$?; trap - EXIT INT TERM; stop_atc_tests; cluster_down || rc=1; check_clean || rc=1; exit $rc' EXIT
	trap 'exit 130' INT TERM
	local t0=$SECONDS
	run_tests
	log "tests took $((SECONDS - t0))s"
}

# One harness at a time on this machine: the bridges, addresses and ports are global.
# A second run waits for the first (CI and a developer may overlap).
lock() {
	exec 9>/run/lock/concourse-tekton-e2e.lock
	if ! flock -n 9; then
		log "another e2e cluster command is running; waiting for it"
		flock 9
	fi
}

case ${1:-} in up | down | test | build) lock ;; esac

case ${1:-} in
test) cluster_test ;;
up) cluster_up ;;
down) need_root && cluster_down ;;
status) cluster_healthy ;;
check-clean) check_clean ;;
kubeconfig) echo "$E2E_KUBECONFIG_PATH" ;;
registry) echo "$REGISTRY_ADDR" ;;
pod-apiserver) echo "$APISERVER_BRIDGE_ADDR" ;;
kubectl) shift && KUBECTL "$@" ;;
ctr) shift && CTR "$@" ;;
build) cluster_build ;;
load) load_images ;;
restart-apiserver) need_root && cluster_healthy && restart_apiserver ;;
restart-kubelet) need_root && cluster_healthy && restart_kubelet ;;
restart-containerd) need_root && cluster_healthy && restart_containerd ;;
compact-etcd) need_root && cluster_healthy && compact_etcd ;;
stop-registry) need_root && cluster_healthy && stop registry ;;
start-registry) need_root && start_build_registry ;;
pid) cat "$E2E_STATE/pids/${2:?which daemon}.pid" ;;
kwok) build_kwok >&2 && echo "KWOK_BIN=$BIN_KWOK/kwok KWOK_STAGES=$BIN_KWOK/stage" ;;
*)
	sed -n '2,27p' "$0" >&2
	exit 2
	;;
esac
