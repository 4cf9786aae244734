// Package layers holds the tests that keep the project's layers as the design draws them:
// no package imports a package of a higher floor, and the pure packages (the Concourse
// model, the compiler, the runner and its contract) never talk to a cluster themselves.
package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/concourse-tekton/concourse-tekton"

// clusterClients are the import paths of the clients that talk to an API server.
var clusterClients = []string{
	"k8s.io/client-go",
	"github.com/tektoncd/pipeline/pkg/client",
	"knative.dev/pkg/client",
	"knative.dev/pkg/injection",
	"sigs.k8s.io/controller-runtime",
}

// The promises, by package pattern.
var promises = []struct {
	pattern string
	// noClient: no package it holds imports a cluster client.
	noClient bool
	// noKubernetes: nothing it depends on, however indirectly, is Kubernetes or Tekton
	// (the runner binary runs in every user image and stays small and standard-library).
	noKubernetes bool
}{
	{pattern: "./concourse/...", noClient: true, noKubernetes: true},
	{pattern: "./runspec/...", noClient: true, noKubernetes: true},
	{pattern: "./runner/...", noClient: true, noKubernetes: true},
	{pattern: "./cmd/concourse-runner", noClient: true, noKubernetes: true},
	{pattern: "./translate/...", noClient: true},
	// The mapping of a build's objects and logs to events: fetch first, then map purely.
	{pattern: "./tektonrun/buildevents/...", noClient: true},
}

// floors are the module's floors, from the ground up. A package may import packages of its
// own floor and of the floors below, never of a floor above; its tests too, so that a test
// cannot tie a lower package to a higher one. A package stands on the floor whose pattern
// names it most closely: cmd/internal/cli is on the command line's floor, not the binaries'.
// Every package of the module stands on a floor: a new folder at the root needs a line here.
var floors = []struct {
	name     string
	patterns []string
}{
	{name: "helpers", patterns: []string{"internal/..."}},
	{name: "the model and the contract", patterns: []string{"concourse/...", "runspec/..."}},
	{name: "the compiler, the step runner, volumes and the mapping of events", patterns: []string{
		"translate/...", "runner/...", "pvc/...", "tektonrun/buildevents/...", "tektonrun/internal/recordedbuilds",
	}},
	{name: "the cluster", patterns: []string{"tektonrun/...", "gc/..."}},
	{name: "the command line", patterns: []string{"cmd/internal/..."}},
	{name: "the binaries, the chart's tests and the end-to-end tests", patterns: []string{"cmd/...", "deploy/...", "e2e/..."}},
}

// upwardExceptions are the imports allowed to run up a floor, as "importer -> imported"
// (paths within the module) with the reason. There are none.
var upwardExceptions = map[string]string{}

type listed struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Deps         []string
}

func TestFloors(t *testing.T) {
	// With the e2e tag, go list reads every file the plain build reads and the end-to-end
	// tests besides (no file of the module is built only without it).
	pkgs := list(t, "./...", "-tags", "e2e")
	for _, problem := range upward(pkgs) {
		t.Error(problem)
	}
	for i, f := range floors {
		for _, pattern := range f.patterns {
			if !slices.ContainsFunc(pkgs, func(p listed) bool { return within(rel(p.ImportPath), pattern) }) {
				t.Errorf("floor %d (%s): %s names no package: remove it, or name the package's new place", i+1, f.name, pattern)
			}
		}
	}
}

// The check itself must catch what it is meant to: an import from a floor to a higher one,
// from a test as from the code, and a package on no floor.
func TestFloorsSeeAnUpwardImport(t *testing.T) {
	pkgs := []listed{
		{ImportPath: module + "/gc", Imports: []string{"context", module + "/tektonrun", module + "/cmd/internal/cli"}},
		{ImportPath: module + "/runner", TestImports: []string{module + "/internal/syncbuf"}, XTestImports: []string{module + "/tektonrun"}},
		{ImportPath: module + "/attic"},
	}
	want := []string{
		"gc (floor 4, the cluster) imports cmd/internal/cli (floor 5, the command line): move what it needs down to floor 4 or below",
		"runner (floor 3, the compiler, the step runner, volumes and the mapping of events) imports tektonrun (floor 4, the cluster) in its tests: move what it needs down to floor 3 or below",
		"attic stands on no floor: name it in the floors of internal/layers",
	}
	if diff := cmp.Diff(want, upward(pkgs)); diff != "" {
		t.Errorf("upward (-want +got):\n%s", diff)
	}
}

// upward says, for each package, which of its imports (its tests' too) run to a higher
// floor, and which package stands on no floor.
func upward(pkgs []listed) []string {
	var problems []string
	for _, p := range pkgs {
		from := rel(p.ImportPath)
		fi, ok := floorOf(from)
		if !ok {
			problems = append(problems, from+" stands on no floor: name it in the floors of internal/layers")
			continue
		}
		for _, imports := range []struct {
			paths []string
			where string
		}{{p.Imports, ""}, {p.TestImports, " in its tests"}, {p.XTestImports, " in its tests"}} {
			for _, imp := range imports.paths {
				if !strings.HasPrefix(imp, module+"/") {
					continue
				}
				to := rel(imp)
				ti, ok := floorOf(to)
				if !ok || ti <= fi || upwardExceptions[from+" -> "+to] != "" {
					continue
				}
				problems = append(problems, fmt.Sprintf("%s (floor %d, %s) imports %s (floor %d, %s)%s: move what it needs down to floor %d or below",
					from, fi+1, floors[fi].name, to, ti+1, floors[ti].name, imports.where, fi+1))
			}
		}
	}
	return problems
}

// floorOf is the index of the floor whose pattern names path most closely.
func floorOf(path string) (int, bool) {
	best, floor := -1, 0
	for i, f := range floors {
		for _, pattern := range f.patterns {
			if within(path, pattern) && len(pattern) > best {
				best, floor = len(pattern), i
			}
		}
	}
	return floor, best >= 0
}

// within says whether a pattern ("x/..." or "x") names a path within the module.
func within(path, pattern string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == dir || strings.HasPrefix(path, dir+"/")
	}
	return path == pattern
}

// rel is an import path of the module within the module.
func rel(importPath string) string {
	return strings.TrimPrefix(importPath, module+"/")
}

func TestLayers(t *testing.T) {
	for _, p := range promises {
		t.Run(p.pattern, func(t *testing.T) {
			pkgs := list(t, p.pattern)
			if len(pkgs) == 0 {
				t.Fatalf("%s matches no package", p.pattern)
			}
			for _, pkg := range pkgs {
				if p.noClient {
					for _, imp := range pkg.Imports {
						if c := clientOf(imp); c != "" {
							t.Errorf("%s imports %s (a cluster client, %s): only tektonrun and pvc talk to the cluster", pkg.ImportPath, imp, c)
						}
					}
				}
				if p.noKubernetes {
					for _, dep := range pkg.Deps {
						if strings.HasPrefix(dep, "k8s.io/") || strings.HasPrefix(dep, "sigs.k8s.io/") || strings.HasPrefix(dep, "github.com/tektoncd/") || strings.HasPrefix(dep, "knative.dev/") {
							t.Errorf("%s depends on %s: it must stay free of Kubernetes and Tekton", pkg.ImportPath, dep)
							break
						}
					}
				}
			}
		})
	}
}

// The check itself must catch what it is meant to: tektonrun does import a client.
func TestLayersSeeAClient(t *testing.T) {
	for _, pkg := range list(t, "./tektonrun") {
		for _, imp := range pkg.Imports {
			if clientOf(imp) != "" {
				return
			}
		}
	}
	t.Fatal("tektonrun imports no cluster client the check recognises: the check is blind")
}

func clientOf(imp string) string {
	for _, c := range clusterClients {
		if imp == c || strings.HasPrefix(imp, c+"/") {
			return c
		}
	}
	return ""
}

// list runs `go list -json` on a pattern of the module, from the module's root, with the
// flags given.
func list(t *testing.T, pattern string, flags ...string) []listed {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goBin); err != nil {
		goBin = "go"
	}
	args := append([]string{"list", "-json=ImportPath,Imports,TestImports,XTestImports,Deps"}, flags...)
	cmd := exec.Command(goBin, append(args, pattern)...)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pattern, err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p.ImportPath, module) {
			t.Fatalf("go list %s gave %s, outside the module", pattern, p.ImportPath)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}
