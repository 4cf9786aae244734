// Package layers holds the test that keeps the project's layers as the design draws them:
// the pure packages (the Concourse model, the compiler, the runner and its contract) never
// talk to a cluster themselves.
package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
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
}

type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
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

// list runs `go list -json` on a pattern of the module, from the module's root.
func list(t *testing.T, pattern string) []listed {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goBin); err != nil {
		goBin = "go"
	}
	cmd := exec.Command(goBin, "list", "-json=ImportPath,Imports,Deps", pattern)
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
