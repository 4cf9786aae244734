package images

import (
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/concourse-tekton/concourse-tekton/internal/ociimage"
)

// Image is one image to build: its reference, its files and its configuration.
type Image struct {
	Ref    string
	Files  []ociimage.File
	Config ociimage.Config
}

// Path is the PATH of every image that has a shell.
const Path = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Pause is the sandbox image: the pause binary alone.
func Pause(ref string, pause []byte) Image {
	return Image{
		Ref:    ref,
		Files:  []ociimage.File{{Path: "/pause", Mode: 0o755, Data: pause}},
		Config: ociimage.Config{Entrypoint: []string{"/pause"}},
	}
}

// BusyboxFiles is a minimal userland: busybox at /bin/busybox, a symlink to it for every
// applet (applets as `busybox --list-full` prints them, e.g. "usr/bin/awk"), a sticky
// /tmp, and root and nobody in passwd and group so that tools that look users up work.
func BusyboxFiles(busybox []byte, applets []string) []ociimage.File {
	files := []ociimage.File{
		{Path: "/bin/busybox", Mode: 0o755, Data: busybox},
		{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Path: "/root", Mode: fs.ModeDir | 0o700},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
		{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnogroup:x:65534:\n")},
	}
	seen := map[string]bool{"bin/busybox": true}
	sorted := append([]string(nil), applets...)
	sort.Strings(sorted)
	for _, a := range sorted {
		p := strings.TrimPrefix(path.Clean("/"+strings.TrimSpace(a)), "/")
		if p == "" || p == "." || seen[p] {
			continue
		}
		seen[p] = true
		files = append(files, ociimage.File{Path: p, Mode: fs.ModeSymlink | 0o777, Target: "/bin/busybox"})
	}
	if !seen["bin/sh"] {
		files = append(files, ociimage.File{Path: "bin/sh", Mode: fs.ModeSymlink | 0o777, Target: "/bin/busybox"})
	}
	return files
}

// Busybox is the shell image steps run in.
func Busybox(ref string, busybox []byte, applets []string) Image {
	return Image{
		Ref:    ref,
		Files:  BusyboxFiles(busybox, applets),
		Config: ociimage.Config{Cmd: []string{"sh"}, Env: []string{Path}},
	}
}

// Probe is the image of the probe a team's step runs to reach another team's things
// (e2e/cmd/probe): the probe at /bin/probe, on busybox.
func Probe(ref string, probe, busybox []byte, applets []string) Image {
	img := Busybox(ref, busybox, applets)
	img.Files = append(img.Files, ociimage.File{Path: "/bin/probe", Mode: 0o755, Data: probe})
	return img
}

// NonRoot is the user of Tekton's own images (ko's base image's "nonroot").
const NonRoot = "65532"

// Tekton is one of Tekton's own images: ko puts the binary at /ko-app/<name>, and
// Tekton's controller names that path in the pods it creates. Like ko's, it runs as
// NonRoot, which Tekton's init containers must when it sets their security context.
func Tekton(ref, name string, binary []byte) Image {
	p := "/ko-app/" + name
	return Image{
		Ref:    ref,
		Files:  []ociimage.File{{Path: p, Mode: 0o755, Data: binary}},
		Config: ociimage.Config{Entrypoint: []string{p}, Env: []string{Path}, User: NonRoot},
	}
}

// TektonShell is Tekton's shell image (the init container that writes steps' scripts):
// busybox as NonRoot.
func TektonShell(ref string, busybox []byte, applets []string) Image {
	img := Busybox(ref, busybox, applets)
	img.Config.User = NonRoot
	return img
}

// Resource is a Concourse resource type image: one binary serving check, in and out
// (it dispatches on its name) at /opt/resource, on top of busybox so that `sh` exists.
// Host files (the host's bash and its libraries, from hostFiles) are laid over it: one at
// a shim's path replaces the shim.
func Resource(ref string, resource, busybox []byte, applets []string, host ...ociimage.File) Image {
	files := BusyboxFiles(busybox, applets)
	given := map[string]bool{}
	for _, f := range host {
		given[f.Path] = true
	}
	for _, f := range shims {
		if !given[f.Path] {
			files = append(files, f)
		}
	}
	files = append(files, host...)
	files = append(files, ociimage.File{Path: "/opt/resource/resource", Mode: 0o755, Data: resource})
	for _, script := range []string{"check", "in", "out"} {
		files = append(files, ociimage.File{Path: "/opt/resource/" + script, Mode: fs.ModeSymlink | 0o777, Target: "resource"})
	}
	return Image{Ref: ref, Files: files, Config: ociimage.Config{Env: []string{Path}, Cmd: []string{"sh"}}}
}

// shims stand in, in the resource images, for the two programs of a full distribution
// that Concourse's testflight fixtures run in the mock resource's image (its mirror_self
// image is a task's image there) and busybox lacks: bash (busybox's sh runs the fixtures'
// scripts, which use nothing of bash's own; the host's bash replaces it when given) and
// printenv.
var shims = []ociimage.File{
	{Path: "/bin/bash", Mode: 0o755, Data: []byte("#!/bin/sh\n# A stand-in: busybox's sh.\nexec /bin/sh \"$@\"\n")},
	{Path: "/usr/bin/printenv", Mode: 0o755, Data: []byte(`#!/bin/sh
# printenv [NAME...]: the environment, or the values of the variables named (exit 1 when
# one is not set), as coreutils' printenv.
[ $# -eq 0 ] && exec env
rc=0
for name in "$@"; do
	if eval "[ -n \"\${$name+set}\" ]"; then eval "printf '%s\n' \"\$$name\""; else rc=1; fi
done
exit $rc
`)},
}

// GitExecPath is where git looks for its helper programs (Debian's build).
const GitExecPath = "/usr/lib/git-core"

// GitResource is the git resource type image: the resource binary at /opt/resource on
// busybox, plus a dynamically linked git (its binaries and libraries in gitFiles, as on
// the host), with the helpers git runs for clone, fetch and push linked to git itself.
func GitResource(ref string, resource, busybox []byte, applets []string, gitFiles []ociimage.File) Image {
	img := Resource(ref, resource, busybox, applets)
	img.Files = append(img.Files, gitFiles...)
	// git init and clone warn without a templates directory; an empty one will do.
	img.Files = append(img.Files, ociimage.File{Path: "/usr/share/git-core/templates", Mode: fs.ModeDir | 0o755})
	for _, helper := range []string{"git-upload-pack", "git-receive-pack", "git-upload-archive"} {
		img.Files = append(img.Files, ociimage.File{Path: GitExecPath + "/" + helper, Mode: fs.ModeSymlink | 0o777, Target: "/usr/bin/git"})
	}
	return img
}

// LddPaths returns the libraries ldd lists (the loader included), in its order.
func LddPaths(out string) []string {
	var paths []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			paths = append(paths, f[2])
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			paths = append(paths, strings.TrimSuffix(f[0], ":"))
		}
	}
	return paths
}
