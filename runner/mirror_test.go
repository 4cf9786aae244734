package runner_test

import (
	"strings"
	"testing"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// mirrorScripts are a mock resource's check and in: check finds "old" and "new" (with
// the MIRRORED_VERSION of its own image appended), in writes a metadata.json whose
// environment says the version it fetched, as the mock mirroring itself does.
func (w *world) mirrorScripts(inFails bool) {
	w.script("check", `echo '[{"v":"old"},{"v":"new'"${MIRRORED_VERSION:+-after-$MIRRORED_VERSION}"'"}]'`)
	fail := ""
	if inFails {
		fail = "echo boom >&2; exit 1\n"
	}
	w.script("in", fail+`v=$(sed -n 's/.*"version":{"v":"\([^"]*\)"}.*/\1/p')
echo "fetching $v" >&2
echo '{"env":["MIRRORED_VERSION='"$v"'"]}' > "$1/metadata.json"
echo '{"version":{"v":"'"$v"'"}}'`)
}

// TestMirroredImage runs steps whose image is the mock resource fetching itself: each
// first fetches it in its own container (checking for the latest version unless it has
// one, each fetch of a chain with the environment the one before gave), its get's log
// shown unless a build of the job fetched it before, and runs with the environment of
// the fetched image's metadata.json; or reads that of an image artifact a get fetched.
func TestMirroredImage(t *testing.T) {
	fetch := func(version map[string]string) runspec.ImageFetch {
		return runspec.ImageFetch{Source: map[string]any{"mirror_self": true}, Version: version}
	}
	tests := []struct {
		name   string
		image  *runspec.MirroredImage
		want   string
		failed bool
	}{
		{name: "a version", image: &runspec.MirroredImage{Fetches: []runspec.ImageFetch{fetch(map[string]string{"v": "pinned"})}}, want: "pinned"},
		{name: "the latest", image: &runspec.MirroredImage{Fetches: []runspec.ImageFetch{fetch(nil)}}, want: "new"},
		{name: "a chain", image: &runspec.MirroredImage{Fetches: []runspec.ImageFetch{fetch(nil), fetch(nil)}}, want: "new-after-new"},
		{name: "an artifact", image: &runspec.MirroredImage{Artifact: "img"}, want: "from-artifact"},
		{name: "none", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.mirrorScripts(false)
			w.artifact("img", map[string]string{"metadata.json": `{"env":["MIRRORED_VERSION=from-artifact"],"user":"root"}`, "rootfs/bin/sh": ""})
			// Two builds of the job: the second finds the images the first fetched in
			// the job's resource caches.
			for i, fetching := range []bool{tt.image != nil && tt.image.Artifact == "", false} {
				spec := w.taskSpec("1", "t", shConfig(`echo "image: $MIRRORED_VERSION"`, nil))
				spec.Build.Name = []string{"1", "2"}[i]
				spec.MirroredImage = tt.image
				r := w.run(spec)
				w.checkRun(r, "1", runspec.Succeeded)
				if r.stdout != "image: "+tt.want+"\n" {
					t.Errorf("build %d: the task printed %q, want image: %s", i+1, r.stdout, tt.want)
				}
				if logged := strings.Contains(r.stderr, "fetching "+tt.want); logged != fetching {
					t.Errorf("build %d: the image's get logged %v (%q), want %v", i+1, logged, r.stderr, fetching)
				}
			}
		})
	}

	t.Run("a check in the image of a custom type", func(t *testing.T) {
		w := newWorld(t)
		w.mirrorScripts(false)
		spec := w.spec(runspec.ModeCheck, "1", "thing")
		spec.Check = &runspec.Check{Type: "custom", Source: map[string]any{}}
		spec.MirroredImage = &runspec.MirroredImage{Fetches: []runspec.ImageFetch{fetch(map[string]string{"v": "type-version"})}}
		r := w.run(spec)
		w.checkRun(r, "1", runspec.Succeeded)
		if got := w.result("1", runspec.ResultVersion); got != `{"v":"new-after-type-version"}` {
			t.Errorf("the check found %s, want the version its image's environment made", got)
		}
	})

	t.Run("a task file's image_resource", func(t *testing.T) {
		w := newWorld(t)
		w.mirrorScripts(false)
		w.artifact("ci", map[string]string{"task.yml": `platform: linux
image_resource: {type: mock, source: {mirror_self: true}, version: {v: from-file}}
run: {path: sh, args: [-c, 'echo "image: $MIRRORED_VERSION"']}
`})
		spec := w.spec(runspec.ModeTask, "1", "t")
		spec.Task = &runspec.Task{File: "ci/task.yml"}
		r := w.run(spec)
		w.checkRun(r, "1", runspec.Succeeded)
		if r.stdout != "image: from-file\n" {
			t.Errorf("the task printed %q, want image: from-file", r.stdout)
		}
	})

	t.Run("a fetch that fails", func(t *testing.T) {
		w := newWorld(t)
		w.mirrorScripts(true)
		spec := w.taskSpec("1", "t", shConfig(`echo ran`, nil))
		spec.MirroredImage = &runspec.MirroredImage{Fetches: []runspec.ImageFetch{fetch(nil)}}
		r := w.run(spec)
		w.checkRun(r, "1", runspec.Errored)
		if r.failure != "fetching the image: its get failed" || !strings.Contains(r.stderr, "boom") || strings.Contains(r.stdout, "ran") {
			t.Errorf("error %q, stderr %q, stdout %q; want the get's error and its log, the task not run", r.failure, r.stderr, r.stdout)
		}
	})
}
