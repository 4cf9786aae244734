#!/usr/bin/env bash
# testflight.sh [FILE...]: runs Concourse's own acceptance suite (testflight/ in the pinned
# module, never copied here and never edited) against a web node whose builds run on
# Tekton, one spec file at a time, serially, and writes a ginkgo JSON report per file.
#
#   FILE  a spec file of the suite (fail, fail_test.go), `ci` (the CI subset below) or
#         `all` (every file). Default: $TESTFLIGHT_FOCUS, else all.
#
# What it does:
#   1. compiles the suite (go test -c) inside the patched source build.sh keeps in the cache;
#   2. unless TESTFLIGHT_ATC_URL names a running web node, makes a namespace of its own and
#      starts Postgres and a web node with web.sh (its own ports, state and home): local
#      users test:test (main team) and guest:guest, the `mock` type's
#      image, fly served from its fly-assets so that the suite downloads it (DOWNLOAD_CLI);
#   3. runs the test binary in the suite's directory once per file (-ginkgo.focus-file),
#      its output in <out>/logs/FILE.log, its report in <out>/reports/FILE.json;
#   4. stops what it started, even on failure or interrupt, and deletes the namespace.
# It prints a summary; make testflight-table writes the README's table from the reports
# (testflight/table). Exit status: 0 when every spec run passed, 1 otherwise, 2 when it could not run.
#
# Settings (environment):
#   TESTFLIGHT_FOCUS         the files to run when none are given (all)
#   TESTFLIGHT_ATC_URL       a web node to use instead of starting one (ATC_USERNAME,
#                            ATC_PASSWORD, ATC_GUEST_USERNAME, ATC_GUEST_PASSWORD: its users;
#                            the suite's defaults are test/test and guest/guest)
#   TESTFLIGHT_OUT           where reports, logs and the web node's state go
#                            (<cache>/testflight; emptied at the start of a run)
#   TESTFLIGHT_WEB_PORT      the web node's port (8190; its debug server uses the next one)
#   TESTFLIGHT_PG_PORT       its Postgres's port (15532, below the ephemeral ports: see web.sh)
#   TESTFLIGHT_KUBECONFIG    the cluster (the e2e cluster's: ~/.cache/concourse-tekton/state/kubeconfig)
#   TESTFLIGHT_NAMESPACE     the namespace builds run in (testflight-<random>, made and deleted)
#   TESTFLIGHT_FILE_TIMEOUT  ginkgo's timeout for one file (15m, list_builds 40m): a build that
#                            waits for a version no check finds waits for ever
#   TESTFLIGHT_KEEP=1        leave the web node, Postgres and the namespace running at the end
#   TESTFLIGHT_MOCK_IMAGE, TESTFLIGHT_RUNNER_IMAGE   the images the cluster has loaded
#   TESTFLIGHT_IMAGE_REGISTRY the registry builds push the images they make to (the e2e
#                            cluster's, E2E_IMAGE_REGISTRY, else 10.88.0.1:5000)
#   TESTFLIGHT_GINKGO_FLAGS  more flags for the test binary (-ginkgo.skip=..., -ginkgo.label-filter=...)
set -euo pipefail

# The CI subset: files that pass here and run in a few minutes together (see the README).
CI_FILES=(fail do try optional_inputs task_outputs task_missing_outputs load_var_step regression timeout)

tf_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
atc_dir=$(dirname "$tf_dir")
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
export GO
xdg_cache=${XDG_CACHE_HOME:-$HOME/.cache}
cache=${CONCOURSE_TEKTON_ATC_CACHE:-$xdg_cache/concourse-tekton/atc}
out=${TESTFLIGHT_OUT:-$cache/testflight}
web_port=${TESTFLIGHT_WEB_PORT:-8190}
pg_port=${TESTFLIGHT_PG_PORT:-15532}
kubeconfig=${TESTFLIGHT_KUBECONFIG:-$xdg_cache/concourse-tekton/state/kubeconfig}
mock_image=${TESTFLIGHT_MOCK_IMAGE:-e2e.invalid/mock-resource:v1}
runner_image=${TESTFLIGHT_RUNNER_IMAGE:-ghcr.io/concourse-tekton/runner:dev}
image_registry=${TESTFLIGHT_IMAGE_REGISTRY:-${E2E_IMAGE_REGISTRY:-10.88.0.1:5000}}
file_timeout=${TESTFLIGHT_FILE_TIMEOUT:-15m}
read -r -a ginkgo_flags <<<"${TESTFLIGHT_GINKGO_FLAGS:-}"

say() { printf '%s\n' "$*" >&2; }
fail() {
	say "error: $*"
	exit 2
}
now() { date +%s; }

# kubectl on the PATH, else the e2e cluster's.
kubectl_bin=$(command -v kubectl || true)
if [ -z "$kubectl_bin" ]; then
	for k in "$xdg_cache"/concourse-tekton/bin/k8s-*/kubectl; do
		[ -x "$k" ] && kubectl_bin=$k
	done
fi
kube() { "$kubectl_bin" --kubeconfig "$kubeconfig" "$@"; }

# files: the spec files to run, as base names (fail_test.go), in the order asked.
files=()
add_file() {
	local f=${1%.go}
	f=${f%_test}_test.go
	[ -e "$src/testflight/$f" ] || fail "no spec file $f in $src/testflight: give a file of the suite, ci or all"
	files+=("$f")
}

# The release build.sh builds, which fly must report.
release=$(sed -n 's/^CONCOURSE_RELEASE=//p' "$atc_dir/build.sh")
[ -n "$release" ] || fail "no CONCOURSE_RELEASE in $atc_dir/build.sh"
# The patched source (and the modfile, unused here): the suite is compiled in its module.
src=$(dirname "$("$atc_dir/build.sh" --modfile)")
src=${src%/modfile/*}/src
[ -d "$src/testflight" ] || fail "no testflight in $src"

args=("$@")
if [ ${#args[@]} -eq 0 ]; then
	read -r -a args <<<"${TESTFLIGHT_FOCUS:-all}"
fi
for a in "${args[@]}"; do
	for f in ${a//,/ }; do
		case $f in
		all)
			for p in "$src"/testflight/*_test.go; do
				[ "$(basename "$p")" = suite_test.go ] || files+=("$(basename "$p")")
			done
			;;
		ci) for c in "${CI_FILES[@]}"; do add_file "$c"; done ;;
		*) add_file "$f" ;;
		esac
	done
done

rm -rf "$out/reports" "$out/logs"
mkdir -p "$out/reports" "$out/logs" "$out/home"
bin_test=$out/testflight.test

start=$(now)
say "• compiling the suite in $src/testflight"
(cd "$src" && GOWORK=off CGO_ENABLED=0 "$GO" test -c -trimpath -buildvcs=false -o "$bin_test" ./testflight) ||
	fail "compiling the testflight suite"
# Every spec of the suite, run or not, for the table's counts.
(cd "$src/testflight" && "$bin_test" -ginkgo.dry-run -ginkgo.json-report="$out/reports/_dry-run.json" >/dev/null) ||
	fail "listing the suite's specs"

# The go command's settings, pinned before HOME changes: fly's targets (~/.flyrc) go to a
# home of our own.
for v in GOENV GOCACHE GOMODCACHE GOPATH; do
	export "$v=$("$GO" env "$v")"
done
export XDG_CACHE_HOME=$xdg_cache CONCOURSE_TEKTON_ATC_CACHE=$cache HOME=$out/home

ns=""
started_web=false
cleanup() {
	local rc=$?
	if [ "${TESTFLIGHT_KEEP:-}" = 1 ]; then
		say "• keeping the web node ($url) and namespace $ns (TESTFLIGHT_KEEP=1): $atc_dir/web.sh down with CONCOURSE_TEKTON_WEB_STATE=$out/web CONCOURSE_TEKTON_WEB_PORT=$web_port CONCOURSE_TEKTON_PG_PORT=$pg_port stops it"
		return $rc
	fi
	if $started_web; then
		"$atc_dir/web.sh" down || say "✗ web.sh down failed"
	fi
	if [ -n "$ns" ]; then
		say "• deleting namespace $ns"
		kube delete namespace "$ns" --wait=true --timeout=120s >/dev/null || say "✗ deleting namespace $ns failed"
	fi
	return $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -n "${TESTFLIGHT_ATC_URL:-}" ]; then
	url=$TESTFLIGHT_ATC_URL
	say "• using the web node at $url"
else
	url=http://127.0.0.1:$web_port
	[ -n "$kubectl_bin" ] || fail "no kubectl on the PATH nor in the e2e cluster's cache"
	[ -e "$kubeconfig" ] || fail "no kubeconfig $kubeconfig: start the cluster (make e2e-up in the repository's root) or set TESTFLIGHT_KUBECONFIG"
	name=${TESTFLIGHT_NAMESPACE:-testflight-$(head -c 64 /dev/urandom | tr -dc a-z0-9 | head -c 5)}
	kube create namespace "$name" >/dev/null || fail "creating namespace $name"
	ns=$name
	for ((i = 0; i < 60; i++)); do
		kube -n "$ns" get serviceaccount default >/dev/null 2>&1 && break
		sleep 1
	done
	export CONCOURSE_TEKTON_WEB_STATE=$out/web CONCOURSE_TEKTON_WEB_PORT=$web_port \
		CONCOURSE_TEKTON_PG_PORT=$pg_port CONCOURSE_TEKTON_FLY_TARGET=testflight-web \
		CONCOURSE_TEKTON_KUBECONFIG=$kubeconfig CONCOURSE_TEKTON_NAMESPACE=$ns \
		CONCOURSE_TEKTON_RUNNER_IMAGE=$runner_image CONCOURSE_TEKTON_RESOURCE_IMAGE=mock=$mock_image \
		CONCOURSE_TEKTON_IMAGE_REGISTRY=$image_registry CONCOURSE_TEKTON_HEARTBEAT_INTERVAL=5s
	# A fresh database each run; one an earlier run left running (TESTFLIGHT_KEEP=1) is stopped.
	"$atc_dir/web.sh" down 2>/dev/null
	rm -rf "$out/web" "$out/fly-assets"
	mkdir -p "$out/fly-assets"
	started_web=true
	"$atc_dir/web.sh" up -- --add-local-user guest:guest --cli-artifacts-dir "$out/fly-assets" ||
		fail "starting the web node: see $out/web/web.log"
	# What the suite downloads (DOWNLOAD_CLI): the fly build.sh made, which reports the release.
	tar -C "$cache/bin" -czf "$out/fly-assets/fly-linux-amd64.tgz" fly
	export DOWNLOAD_CLI=true
fi
export ATC_URL=$url
# A new web node makes its identity tokens' signing keys (RSA and EC) when its lifecycler
# first runs, shortly after it starts: idtoken's specs need both.
for ((i = 0; i < 120; i++)); do
	jwks=$(curl -fsS --max-time 2 "$url/.well-known/jwks.json" 2>/dev/null || true)
	[[ $jwks == *'"kty":"RSA"'* && $jwks == *'"kty":"EC"'* ]] && break
	sleep 1
done
say "✓ ready ($(($(now) - start))s): ${#files[@]} files, reports in $out/reports"

failed=0
summary=()
for f in "${files[@]}"; do
	name=${f%_test.go}
	fstart=$(now)
	say "• $f"
	rc=0
	timeout=$file_timeout
	# Its BeforeEach runs four builds of hooks.yml (seven steps, a pod each), for each of 3 specs.
	if [ "$f" = list_builds_test.go ] && [ -z "${TESTFLIGHT_FILE_TIMEOUT:-}" ]; then timeout=40m; fi
	# The suite's download test builds fly (gexec.Build) in the module: with build.sh's
	# flags, it comes from the build cache.
	(cd "$src/testflight" && GOWORK=off CGO_ENABLED=0 \
		GOFLAGS="-trimpath -buildvcs=false -ldflags=-X=github.com/concourse/concourse.Version=$release" \
		"$bin_test" -test.v -ginkgo.v -ginkgo.no-color \
		-ginkgo.focus-file="(^|/)${f//./\\.}\$" -ginkgo.timeout="$timeout" \
		-ginkgo.json-report="$out/reports/$name.json" "${ginkgo_flags[@]}") \
		>"$out/logs/$name.log" 2>&1 || rc=$?
	took=$(($(now) - fstart))
	counts=$(grep -aoE 'Ran [0-9]+ of [0-9]+ Specs|[0-9]+ Passed \| [0-9]+ Failed' "$out/logs/$name.log" | tr '\n' ' ' || true)
	if [ $rc = 0 ]; then
		say "✓ $f (${took}s) $counts"
		summary+=("✓ $f ${took}s $counts")
	else
		failed=1
		say "✗ $f (${took}s, exit $rc) $counts: see $out/logs/$name.log"
		summary+=("✗ $f ${took}s $counts")
	fi
done

say "testflight ($(($(now) - start))s):"
printf '  %s\n' "${summary[@]}" >&2
say "the README's table from these reports: make -C $atc_dir testflight-table"
exit $failed
