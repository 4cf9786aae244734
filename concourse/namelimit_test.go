package concourse_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
)

// TestLongNames: a name a build's Kubernetes objects would carry past what the API
// server takes (a 1 MB job name made 2.1 MB of annotations an object) is refused at the
// name, and the path shows the element's index rather than the name.
func TestLongNames(t *testing.T) {
	long := strings.Repeat("j", 1<<20)
	atLimit := strings.Repeat("r", 16<<10)
	yaml := "resources:\n- name: " + atLimit + "\n  type: git\njobs:\n- name: " + long + "\n  plan:\n  - get: " + atLimit + "\n  - get: " + long + "\n    resource: " + atLimit + "\n"
	_, diags := concourse.ParsePipeline("p.yml", []byte(yaml), nil)
	want := []string{
		"5:3: jobs[0].name: job name is 1 MiB, over the limit of 16 KiB for a name: the build's Kubernetes objects carry it, and the API server refuses an object whose annotations pass 256 KiB: shorten it",
		"8:5: jobs[0].plan[1].get: get step name is 1 MiB, over the limit of 16 KiB for a name: the build's Kubernetes objects carry it, and the API server refuses an object whose annotations pass 256 KiB: shorten it",
	}
	if diff := cmp.Diff(want, render(diags)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
