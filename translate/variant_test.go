package translate

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// TestTaskVariantKey: the key a compile memoises step Tasks by tells apart variants that
// differ in any one field, so that two variants never share a Task by mistake. A field
// added to taskVariant fails here until key() and this test know it.
func TestTaskVariantKey(t *testing.T) {
	cpu, mem := concourse.CPULimit(512), concourse.MemoryLimit(1<<30)
	set := map[string]func(*taskVariant){
		"privileged":    func(v *taskVariant) { v.privileged = true },
		"asRoot":        func(v *taskVariant) { v.asRoot = true },
		"runAs":         func(v *taskVariant) { v.runAs = 1000 },
		"limits":        func(v *taskVariant) { v.limits.CPU = &cpu },
		"secrets":       func(v *taskVariant) { v.secrets = []secretMount{{secret: "s", path: "/p"}} },
		"credentials":   func(v *taskVariant) { v.credentials = []string{"k"} },
		"count":         func(v *taskVariant) { v.count = true },
		"publish":       func(v *taskVariant) { v.publish = true },
		"varsResult":    func(v *taskVariant) { v.varsResult = true },
		"taskVars":      func(v *taskVariant) { v.taskVars = "run-resolve-task" },
		"verdict":       func(v *taskVariant) { v.verdict = true },
		"verdictInline": func(v *taskVariant) { v.verdict, v.verdictInline = true, true },
		"sharedCaches":  func(v *taskVariant) { v.sharedCaches = true },
		"imageVolume":   func(v *taskVariant) { v.imageVolume = true },
		"identityAudience": func(v *taskVariant) {
			v.identityAudience, v.identityExpiration = "sts.amazonaws.com", 3600
		},
		"identityExpiration": func(v *taskVariant) { v.identityAudience, v.identityExpiration = "vault", 600 },
	}
	typ := reflect.TypeOf(taskVariant{})
	for i := range typ.NumField() {
		if _, ok := set[typ.Field(i).Name]; !ok {
			t.Errorf("taskVariant.%s: not in key() or this test", typ.Field(i).Name)
		}
	}
	// Variations inside the fields that hold several things.
	more := map[string]func(*taskVariant){
		"memory limit":    func(v *taskVariant) { v.limits.Memory = &mem },
		"secret keys":     func(v *taskVariant) { v.secrets = []secretMount{{secret: "s", path: "/p", keys: []string{"a"}}} },
		"secret path":     func(v *taskVariant) { v.secrets = []secretMount{{secret: "s", path: "/q"}} },
		"two secrets":     func(v *taskVariant) { v.secrets = []secretMount{{secret: "s", path: "/p"}, {secret: "t", path: "/p"}} },
		"two credentials": func(v *taskVariant) { v.credentials = []string{"k", "l"} },
		"identity expiry": func(v *taskVariant) { v.identityAudience, v.identityExpiration = "vault", 601 },
	}
	keys := map[string]string{string(taskVariant{}.appendKey(nil)): "the zero variant"}
	for _, m := range []map[string]func(*taskVariant){set, more} {
		for name, f := range m {
			var v taskVariant
			f(&v)
			k := string(v.appendKey(nil))
			if other, ok := keys[k]; ok {
				t.Errorf("%s has the key of %s: %q", name, other, k)
			}
			keys[k] = name
		}
	}
}

// TestStepTaskNames: a step Task's name is the hash of its spec, whether made or
// remembered (stepTasks), for each runner image apart; the memory stays bounded.
func TestStepTaskNames(t *testing.T) {
	cpu := concourse.CPULimit(256)
	variants := []taskVariant{{}, {privileged: true}, {runAs: 1000, count: true}, {limits: concourse.ContainerLimits{CPU: &cpu}},
		{secrets: []secretMount{{secret: "s", path: "/p", keys: []string{"a"}}}, verdict: true},
		{imageVolume: true}, {imageVolume: true, verdict: true, verdictInline: true}}
	for _, image := range []string{"runner:a", "runner:b"} {
		for _, v := range variants {
			for range 2 {
				task := stepTaskFor(image, v)
				buf, err := json.Marshal(task.Spec)
				if err != nil {
					t.Fatal(err)
				}
				if want := "concourse-step-" + runspec.ShortHash(buf); task.Name != want {
					t.Errorf("%s %+v: named %s, its spec's hash is %s", image, v, task.Name, want)
				}
				if made := makeStepTask(image, v); !reflect.DeepEqual(task, made) {
					t.Errorf("%s %+v: the Task remembered is not the one made", image, v)
				}
			}
		}
	}
	for i := range stepTasks.max + 10 {
		stepTasks.put(strconv.Itoa(i), &v1.Task{})
	}
	if n := len(stepTasks.m); n > stepTasks.max {
		t.Errorf("%d Tasks remembered, over %d", n, stepTasks.max)
	}
}

// TestStepTaskDocs: the document of a step Task the process made is rendered once, and
// is the document the same Task has when rendered afresh; any other Task is rendered
// every time and kept nowhere.
func TestStepTaskDocs(t *testing.T) {
	task := stepTaskFor("runner:docs", taskVariant{count: true, runAs: 1000})
	fresh, err := renderObject(nil, task.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		doc, err := objectYAML([]byte("---\n"), task)
		if err != nil {
			t.Fatal(err)
		}
		if want := "---\n" + string(fresh); string(doc) != want {
			t.Fatalf("render %d:\n%s\nwant\n%s", i, doc, want)
		}
		kept, shared := stepTaskDocs.get(task)
		if !shared || !bytes.Equal(kept, fresh) {
			t.Fatalf("render %d: kept %q (shared %v), want the Task's document", i, kept, shared)
		}
		doc[len(doc)-1] = 'x' // the caller's bytes are its own
	}
	other := task.DeepCopy()
	other.Spec.Description = "not shared"
	doc, err := objectYAML(nil, other)
	if err != nil || !strings.Contains(string(doc), "not shared") {
		t.Fatalf("another Task: %s (%v)", doc, err)
	}
	if _, shared := stepTaskDocs.get(other); shared {
		t.Error("a Task the process did not make as a step Task was kept")
	}
	for range stepTaskDocs.max + 10 {
		stepTaskDocs.put(&v1.Task{}, nil)
	}
	if n := len(stepTaskDocs.m); n > stepTaskDocs.max {
		t.Errorf("%d documents kept, over %d", n, stepTaskDocs.max)
	}
}
