#!/usr/bin/env bash
# Builds fly and concourse-tekton-web, from the Concourse module pinned in go.mod with
# patches/*.patch applied, into the cache:
#
#   $CACHE/<release>-<key>/src/               the module's source, patched (never in the repo)
#   $CACHE/<release>-<key>/modfile/<checkout>/go.mod   ours, plus a replace by src/
#   $CACHE/<release>-<key>/bin/fly            fly, reporting <release>
#   $CACHE/<release>-<key>/bin/concourse-tekton-web
#   $CACHE/bin -> <release>-<key>/bin         the last build
#
# CACHE is $CONCOURSE_TEKTON_ATC_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/concourse-tekton/atc;
# <key> hashes the pinned version and the patches. The patched source and fly are made once
# per key; the web binary is rebuilt every time (Go's build cache makes that quick), since
# it includes this repository's code. Progress goes to stderr; stdout gets only the bin
# directory.
#
# build.sh --modfile prepares only the patched source and the go.mod that points this
# module at it, and prints that go.mod's path: go test -modfile=$(./build.sh --modfile) ./...
set -euo pipefail

modfile_only=false
case "${1:-}" in
"") ;;
--modfile) modfile_only=true ;;
*)
	echo "usage: $0 [--modfile]" >&2
	exit 2
	;;
esac

# The Concourse release that the pseudo-version in go.mod is. Both fly and the web node
# report it: fly refuses to talk to a web node whose version differs too much.
CONCOURSE_RELEASE=7.14.2
CONCOURSE_MODULE=github.com/concourse/concourse

atc_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
cache=${CONCOURSE_TEKTON_ATC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/concourse-tekton/atc}

say() { printf '%s\n' "$*" >&2; }
fail() { say "error: $*"; exit 1; }
now() { date +%s; }
took() { echo "$(( $(now) - $1 ))s"; }

cd "$atc_dir"
version=$(awk -v m="$CONCOURSE_MODULE" '$1 == m { print $2 }' go.mod)
[ -n "$version" ] || fail "go.mod does not require $CONCOURSE_MODULE"
shopt -s nullglob
patches=(patches/*.patch)
shopt -u nullglob
key=$( { echo "$version"; cat "${patches[@]}"; } | sha256sum | cut -c1-12)
dir=$cache/$CONCOURSE_RELEASE-$key
ldflags="-X $CONCOURSE_MODULE.Version=$CONCOURSE_RELEASE"
mkdir -p "$dir/bin"

# The patched source. GOWORK=off: go.mod alone says which version is pinned.
if [ ! -e "$dir/src/.patched" ]; then
	start=$(now)
	say "• downloading $CONCOURSE_MODULE@$version"
	GOWORK=off "$GO" mod download "$CONCOURSE_MODULE"
	pristine=$(GOWORK=off "$GO" list -m -f '{{.Dir}}' "$CONCOURSE_MODULE")
	[ -d "$pristine" ] || fail "no source for $CONCOURSE_MODULE@$version in the module cache"
	rm -rf "$dir/src.tmp" "$dir/src"
	cp -R "$pristine" "$dir/src.tmp"
	chmod -R u+w "$dir/src.tmp"
	for p in "${patches[@]}"; do
		say "• applying $p"
		patch -p1 --forward --batch --quiet -d "$dir/src.tmp" <"$p" >&2 ||
			fail "$p does not apply to $CONCOURSE_MODULE@$version: update the patch for this version"
	done
	touch "$dir/src.tmp/.patched"
	mv "$dir/src.tmp" "$dir/src"
	say "✓ patched source in $dir/src ($(took "$start"))"
fi

# The go.mod this module is built with: ours, plus a replace of Concourse by the patched
# source (a go.work would do the same but lets go fetch checksums this module's go.sum
# does not need, and some of Concourse's old dependencies are not in the checksum
# database). One per checkout of this repository, since relative replaces resolve from it.
work=$dir/modfile/$(printf '%s' "$atc_dir" | sha256sum | cut -c1-12)
mkdir -p "$work"
cp go.mod "$work/go.mod.tmp"
cp go.sum "$work/go.sum.tmp"
GOWORK=off "$GO" mod edit -replace="$CONCOURSE_MODULE@$version=$dir/src" "$work/go.mod.tmp"
mv "$work/go.sum.tmp" "$work/go.sum"
mv "$work/go.mod.tmp" "$work/go.mod"
if $modfile_only; then
	printf '%s\n' "$work/go.mod"
	exit 0
fi

# fly, built in the module itself, so with Concourse's own dependency versions.
if [ "$("$dir/bin/fly" --version 2>/dev/null || true)" != "$CONCOURSE_RELEASE" ]; then
	start=$(now)
	say "• building fly $CONCOURSE_RELEASE"
	(cd "$dir/src" && GOWORK=off CGO_ENABLED=0 "$GO" build -trimpath -buildvcs=false \
		-ldflags "$ldflags" -o "$dir/bin/fly.tmp" ./fly)
	mv "$dir/bin/fly.tmp" "$dir/bin/fly"
	say "✓ fly ($(took "$start"))"
fi

start=$(now)
say "• building concourse-tekton-web"
GOWORK=off CGO_ENABLED=0 "$GO" build -modfile="$work/go.mod" -trimpath -buildvcs=false \
	-ldflags "$ldflags" -o "$dir/bin/concourse-tekton-web.tmp" ./cmd/concourse-tekton-web ||
	fail "building concourse-tekton-web; if go says go.mod needs updates, the main module's dependencies changed: run 'go mod tidy' in $atc_dir"
mv "$dir/bin/concourse-tekton-web.tmp" "$dir/bin/concourse-tekton-web"
say "✓ concourse-tekton-web ($(took "$start"))"

ln -sfn "$CONCOURSE_RELEASE-$key/bin" "$cache/bin"
printf '%s\n' "$cache/bin"
