#!/usr/bin/env bash
# Builds fly and concourse-tekton-web, from Concourse's source at the release below with
# patches/*.patch applied and its web UI compiled, into the cache:
#
#   $CACHE/<release>-<key>/src/               the release's source, patched, with the UI built
#                                             into web/public (never in the repo)
#   $CACHE/<release>-<key>/modfile/<checkout>/go.mod   ours, plus a replace by src/
#   $CACHE/<release>-<key>/bin/fly            fly, reporting <release>
#   $CACHE/<release>-<key>/bin/concourse-tekton-web    the web node, its UI embedded
#   $CACHE/<release>-<key>/bin/fly-assets/    fly for each of $CONCOURSE_TEKTON_FLY_PLATFORMS
#                                             (GOOS/GOARCH ...), for the web node's image
#   $CACHE/bin -> <release>-<key>/bin         the last build
#   $CACHE/ui-tools-<lock>/node_modules       the UI's build tools, from the npm registry
#
# CACHE is $CONCOURSE_TEKTON_ATC_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/concourse-tekton/atc;
# <key> hashes the release, the patches and ui.sh. The Go module proxy does not serve
# Concourse 8, so the source is the tarball in ../shared/third_party when it is there
# (CONCOURSE_TEKTON_THIRD_PARTY names another directory), its sha256 checked; else the
# release's git tag, cloned from CONCOURSE_TEKTON_CONCOURSE_GIT (GitHub), its commit
# checked. The UI (less, Elm, uglify, webpack) is built as Concourse's package.json builds
# it, by ui.sh (which says where its tools and packages come from).
#
# The patched source, its UI and fly are made once per key; the web binary is rebuilt
# every time (Go's build cache makes that quick), since it includes this repository's
# code. Progress goes to stderr; stdout gets only the bin directory.
#
# build.sh --modfile prepares only the patched source (no UI) and the go.mod that points
# this module at it, and prints that go.mod's path: go test -modfile=$(./build.sh --modfile) ./...
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

# The Concourse release built, and what identifies its source. Both fly and the web node
# report the release: fly refuses to talk to a web node whose version differs too much.
CONCOURSE_RELEASE=8.2.5
CONCOURSE_COMMIT=10d78df20d5e35b729e0049c6f1c219fa771d596
CONCOURSE_TARBALL=concourse-$CONCOURSE_RELEASE-src.tar.gz
CONCOURSE_TARBALL_SHA256=943b8a5bc6f4da59f644afba44080cdc2c1bb8a8013a375f0595c6697fb7e241
CONCOURSE_MODULE=github.com/concourse/concourse

atc_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
cache=${CONCOURSE_TEKTON_ATC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/concourse-tekton/atc}
third_party=${CONCOURSE_TEKTON_THIRD_PARTY:-$atc_dir/../../shared/third_party}
concourse_git=${CONCOURSE_TEKTON_CONCOURSE_GIT:-https://github.com/concourse/concourse}

say() { printf '%s\n' "$*" >&2; }
fail() { say "error: $*"; exit 1; }
now() { date +%s; }
took() { echo "$(( $(now) - $1 ))s"; }
sha256() { sha256sum "$1" | cut -d' ' -f1; }

cd "$atc_dir"
version=$(awk -v m="$CONCOURSE_MODULE" '$1 == m { print $2 }' go.mod)
[ -n "$version" ] || fail "go.mod does not require $CONCOURSE_MODULE"
shopt -s nullglob
patches=(patches/*.patch)
shopt -u nullglob
key=$( { echo "$CONCOURSE_RELEASE $CONCOURSE_COMMIT"; cat "${patches[@]}" ui.sh; } | sha256sum | cut -c1-12)
dir=$cache/$CONCOURSE_RELEASE-$key
ldflags="-s -w -X $CONCOURSE_MODULE.Version=$CONCOURSE_RELEASE"
mkdir -p "$dir/bin"

# fetch_source DIR: the release's pristine source into DIR.
fetch_source() {
	local tarball=$third_party/$CONCOURSE_TARBALL
	if [ -f "$tarball" ]; then
		say "• unpacking $tarball"
		[ "$(sha256 "$tarball")" = "$CONCOURSE_TARBALL_SHA256" ] ||
			fail "$tarball: sha256 is not $CONCOURSE_TARBALL_SHA256"
		mkdir -p "$1"
		tar -xzf "$tarball" -C "$1" --strip-components=1
	else
		say "• cloning $concourse_git v$CONCOURSE_RELEASE (no $tarball)"
		git clone --quiet --depth 1 --branch "v$CONCOURSE_RELEASE" "$concourse_git" "$1" ||
			fail "cloning $concourse_git: put $CONCOURSE_TARBALL in $third_party for an offline build"
		local commit
		commit=$(git -C "$1" rev-parse HEAD)
		[ "$commit" = "$CONCOURSE_COMMIT" ] || fail "v$CONCOURSE_RELEASE of $concourse_git is $commit, not $CONCOURSE_COMMIT"
		rm -rf "$1/.git"
	fi
}

# The patched source.
if [ ! -e "$dir/src/.patched" ]; then
	start=$(now)
	rm -rf "$dir/src.tmp" "$dir/src"
	fetch_source "$dir/src.tmp"
	for p in "${patches[@]}"; do
		say "• applying $p"
		patch -p1 --forward --batch --quiet -d "$dir/src.tmp" <"$p" >&2 ||
			fail "$p does not apply to Concourse $CONCOURSE_RELEASE: update the patch for this release"
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

# The web UI, which the web node embeds (//go:embed public in web/handler.go).
if [ ! -e "$dir/src/web/public/.ui-built" ]; then
	./ui.sh "$dir/src" "$cache"
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

# fly for the platforms the web node's image offers for download (fly sync, the UI's
# links): $CONCOURSE_TEKTON_FLY_PLATFORMS, GOOS/GOARCH words, into bin/fly-assets.
host_platform=$("$GO" env GOOS)/$("$GO" env GOARCH)
for platform in ${CONCOURSE_TEKTON_FLY_PLATFORMS:-}; do
	goos=${platform%/*} goarch=${platform#*/}
	[ -n "$goos" ] && [ -n "$goarch" ] && [ "$platform" = "$goos/$goarch" ] ||
		fail "CONCOURSE_TEKTON_FLY_PLATFORMS: $platform is not GOOS/GOARCH"
	exe=fly-$goos-$goarch
	[ "$goos" = windows ] && exe=$exe.exe
	mkdir -p "$dir/bin/fly-assets"
	[ -e "$dir/bin/fly-assets/$exe" ] && continue
	if [ "$platform" = "$host_platform" ]; then
		cp "$dir/bin/fly" "$dir/bin/fly-assets/$exe.tmp"
	else
		start=$(now)
		say "• building fly $CONCOURSE_RELEASE for $platform"
		(cd "$dir/src" && GOWORK=off CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch "$GO" build -trimpath -buildvcs=false \
			-ldflags "$ldflags" -o "$dir/bin/fly-assets/$exe.tmp" ./fly)
		say "✓ fly for $platform ($(took "$start"))"
	fi
	mv "$dir/bin/fly-assets/$exe.tmp" "$dir/bin/fly-assets/$exe"
done

start=$(now)
say "• building concourse-tekton-web"
GOWORK=off CGO_ENABLED=0 "$GO" build -modfile="$work/go.mod" -trimpath -buildvcs=false \
	-ldflags "$ldflags" -o "$dir/bin/concourse-tekton-web.tmp" ./cmd/concourse-tekton-web ||
	fail "building concourse-tekton-web; if go says go.mod needs updates, the main module's dependencies changed: run 'go mod tidy' in $atc_dir"
mv "$dir/bin/concourse-tekton-web.tmp" "$dir/bin/concourse-tekton-web"
say "✓ concourse-tekton-web ($(took "$start"))"

ln -sfn "$CONCOURSE_RELEASE-$key/bin" "$cache/bin"
printf '%s\n' "$cache/bin"
