#!/usr/bin/env bash
# ui.sh SRC CACHE: builds Concourse's web UI in the source tree SRC (its web/public, which
# the web node embeds: build it before the binary), as Concourse's package.json builds it:
# less and clean-css, `elm make --optimize` and uglify, the simple-icons script, webpack.
# build.sh runs it once per patched source; it writes SRC/web/public/.ui-built last.
#
# Its inputs, in the cache CACHE, made once and reused:
#   CACHE/ui-tools-<lock>/node_modules   the npm build tools, from the npm registry (or npm's
#                                        own cache): third_party's lockfile when it is there,
#                                        else the release's package-lock.json
#   CACHE/elm-home-<sha>/                ELM_HOME: third_party's elm-packages.tar.gz unpacked,
#                                        or, without it, the packages elm downloads
# Everything after the npm install works with no network (third_party/README.md).
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 SRC CACHE" >&2; exit 2; }
src=$(cd "$1" && pwd)
cache=$2
atc_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
third_party=${CONCOURSE_TEKTON_THIRD_PARTY:-$atc_dir/../../shared/third_party}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
ELM_PACKAGES_SHA256=83452903b4c59772e95149cba76e4507fd505d5ca1a328bf40cb3e3a1f878c11

say() { printf '%s\n' "$*" >&2; }
fail() { say "error: $*"; exit 1; }
now() { date +%s; }
took() { echo "$(( $(now) - $1 ))s"; }
sha256() { sha256sum "$1" | cut -d' ' -f1; }

command -v npm >/dev/null || fail "building the web UI needs node and npm (Debian: apt-get install nodejs npm)"

# The npm tools, installed once per lockfile.
tools_src=$third_party/tools/npm-build-tools
[ -f "$tools_src/package-lock.json" ] || tools_src=$src
lock=$(sha256 "$tools_src/package-lock.json" | cut -c1-12)
tools=$cache/ui-tools-$lock
if [ ! -e "$tools/.installed" ]; then
	start=$(now)
	say "• installing the UI's build tools ($tools_src/package-lock.json)"
	rm -rf "$tools"
	mkdir -p "$tools"
	cp "$tools_src/package.json" "$tools_src/package-lock.json" "$tools/"
	# --ignore-scripts: no install script runs (none is needed to build).
	(cd "$tools" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2) ||
		fail "npm ci of the UI's build tools failed (it needs the npm registry or npm's cache)"
	touch "$tools/.installed"
	say "✓ UI build tools ($(took "$start"))"
fi

# ELM_HOME, with the packages when third_party has them.
packages=$third_party/elm-packages.tar.gz
if [ -f "$packages" ]; then
	[ "$(sha256 "$packages")" = "$ELM_PACKAGES_SHA256" ] || fail "$packages: sha256 is not $ELM_PACKAGES_SHA256"
	export ELM_HOME=$cache/elm-home-${ELM_PACKAGES_SHA256:0:12}
	if [ ! -e "$ELM_HOME/.unpacked" ]; then
		rm -rf "$ELM_HOME"
		mkdir -p "$ELM_HOME"
		tar -xzf "$packages" -C "$ELM_HOME"
		touch "$ELM_HOME/.unpacked"
	fi
else
	say "• no $packages: elm downloads its packages"
	export ELM_HOME=$cache/elm-home-downloaded
	mkdir -p "$ELM_HOME"
fi

start=$(now)
say "• building the web UI"
ln -sfn "$tools/node_modules" "$src/node_modules"
export PATH=$tools/node_modules/.bin:$PATH
cd "$src"
rm -f web/public/.ui-built
# 1. CSS (package.json's build-less)
lessc web/assets/css/main.less web/public/main.out.css
cleancss -o web/public/main.css web/public/main.out.css
rm web/public/main.out.css
# 2. Elm (build-elm)
(
	cd web/elm
	# Its progress goes to stdout, its errors to stderr.
	elm make --optimize --output ../public/elm.js src/Main.elm >/dev/null
	uglifyjs ../public/elm.js --compress "pure_funcs=[F2,F3,F4,F5,F6,F7,F8,F9,A2,A3,A4,A5,A6,A7,A8,A9],pure_getters,keep_fargs=false,unsafe_comps,unsafe" |
		uglifyjs --mangle --output ../public/elm.min.js
)
# 3. The simple-icons script, from node_modules/simple-icons (standard library only)
GOWORK=off GOTOOLCHAIN=local GOPROXY=off "$GO" run ./hack/update-si-svg/ >&2
# 4. The JS bundle (build-js), which imports si-svg.min.js
webpack --mode production >&2
rm -f node_modules
for f in main.css elm.min.js bundle.js si-svg.min.js; do
	[ -s "web/public/$f" ] || fail "the UI build made no web/public/$f"
done
touch web/public/.ui-built
say "✓ web UI ($(took "$start"))"
