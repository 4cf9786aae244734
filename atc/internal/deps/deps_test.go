package deps

import (
	"os"
	"testing"

	"golang.org/x/mod/modfile"

	// What the engine adapter will link together, Concourse's web node and the backend:
	// this test compiles only if they build into one binary.
	_ "github.com/concourse-tekton/concourse-tekton/tektonrun"
	_ "github.com/concourse/concourse/atc/atccmd"
	_ "github.com/concourse/concourse/atc/db"
	_ "github.com/concourse/concourse/atc/engine"
	_ "github.com/concourse/concourse/atc/exec"
)

// raisedByConcourse lists the modules of the main module that this module selects at a
// higher version than the main module does, because Concourse requires it, and why that
// is acceptable. An entry is removed when the difference goes away.
var raisedByConcourse = map[string]string{
	"golang.org/x/exp": "tektonrun reaches only x/exp/slices (through a dependency); Concourse requires a build from two months later",
}

func init() {
	// Concourse 8.2.5 requires client-go v0.36.0 (its Kubernetes credential manager),
	// one minor release past Tekton's pin, which the main module keeps. A client one
	// minor apart from the API server is within Kubernetes' skew policy; tektonrun runs
	// with these in this module's tests and in make -C atc e2e, against the real cluster.
	const k8s = "raised with client-go v0.36.0, which Concourse 8.2.5 requires: tested here and by make -C atc e2e"
	for _, m := range []string{
		"k8s.io/api", "k8s.io/client-go", "k8s.io/kube-openapi", "k8s.io/utils",
		"sigs.k8s.io/structured-merge-diff/v6", "github.com/google/gnostic-models",
		"github.com/emicklei/go-restful/v3", "github.com/fxamacker/cbor/v2",
		"github.com/go-openapi/jsonpointer", "github.com/go-openapi/jsonreference", "github.com/go-openapi/swag",
		"golang.org/x/time",
	} {
		raisedByConcourse[m] = k8s
	}
}

// The go.mod files of the main module and of this one, relative to this package. Since
// Go 1.17 a tidy go.mod lists every module that provides a package to its build, at the
// version selected, so comparing them compares the builds.
const (
	mainGoMod = "../../../go.mod"
	atcGoMod  = "../../go.mod"
)

func requires(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax(path, raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{}
	for _, r := range f.Require {
		versions[r.Mod.Path] = r.Mod.Version
	}
	return versions
}

func TestMainModuleVersionsKept(t *testing.T) {
	mainVersions, atcVersions := requires(t, mainGoMod), requires(t, atcGoMod)

	differ := map[string]bool{}
	for path, version := range atcVersions {
		mainVersion, ok := mainVersions[path]
		if !ok || version == mainVersion {
			continue
		}
		differ[path] = true
		if _, ok := raisedByConcourse[path]; !ok {
			t.Errorf("%s is %s here but %s in the main module: tektonrun would run with a version its tests did not run with; raise it in ../go.mod, or list it in raisedByConcourse with the reason it is safe",
				path, version, mainVersion)
		}
	}
	for path := range raisedByConcourse {
		if !differ[path] {
			t.Errorf("%s is listed in raisedByConcourse but no longer differs from the main module: remove it", path)
		}
	}
}
