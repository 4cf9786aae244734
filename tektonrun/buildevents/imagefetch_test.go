package buildevents

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// TestImageFetch: a task whose registry image_resource the kubelet pulled shows
// Concourse's image check and get (concourse-semantics.md, 4.3), the get's version the
// digest of the pull; a pinned version has no check; a task that runs an artifact, and
// images of other types, show none.
func TestImageFetch(t *testing.T) {
	task := runspec.Spec{Mode: runspec.ModeTask, PlanID: "7", Task: &runspec.Task{}}
	busybox := concourse.TaskConfig{ImageResource: &concourse.ImageResource{Type: "registry-image", Source: concourse.Source{"repository": "busybox", "password": "s3cret"}}}
	origin := event.Origin{ID: "7"}
	encode := func(evs []event.Event) []string {
		var out []string
		for _, e := range evs {
			env, err := event.Marshal(e, 0)
			if err != nil {
				t.Fatal(err)
			}
			var v struct {
				Data  json.RawMessage `json:"data"`
				Event string          `json:"event"`
			}
			if err := json.Unmarshal(env, &v); err != nil {
				t.Fatal(err)
			}
			out = append(out, v.Event+" "+string(v.Data))
		}
		return out
	}
	want := []string{
		`image-check {"time":5,"origin":{"id":"7"},"plan":{"id":"7/image-check","check":{"name":"image","type":"registry-image"}}}`,
		`image-get {"time":5,"origin":{"id":"7"},"plan":{"id":"7/image-get","get":{"name":"image","type":"registry-image"}}}`,
		`initialize-check {"origin":{"id":"7/image-check"},"time":5,"name":"image"}`,
		`selected-worker {"time":5,"origin":{"id":"7/image-check"},"selected_worker":"node-1"}`,
		`start {"origin":{"id":"7/image-check"},"time":5}`,
		`finish {"origin":{"id":"7/image-check"},"time":5,"succeeded":true}`,
		`initialize-get {"origin":{"id":"7/image-get"},"time":5}`,
		`start-get {"origin":{"id":"7/image-get"},"time":5}`,
		`selected-worker {"time":5,"origin":{"id":"7/image-get"},"selected_worker":"node-1"}`,
		`finish-get {"origin":{"id":"7/image-get"},"time":5,"exit_status":0,"version":{"digest":"sha256:abc"}}`,
	}
	got := encode(imageFetch(task, busybox, origin, 5, "node-1", imageFetchOf{digest: "sha256:abc"}))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a registry image (-want +got):\n%s", diff)
	}
	// The fetch as the compiler planned it, with the task's resource types and tags: the
	// compiler's, and the mapper plans nothing of its own.
	recorded := task
	planned, err := translate.PulledTaskImage("7", *busybox.ImageResource, nil, nil, false)
	recorded.PulledImage = planned
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, encode(imageFetch(recorded, busybox, origin, 5, "node-1", imageFetchOf{digest: "sha256:abc"}))); diff != "" {
		t.Errorf("a registry image planned by the compiler (-want +got):\n%s", diff)
	}
	recorded.PulledImage = &runspec.PulledImage{Name: "image", CheckID: "7/planned-check", GetID: "7/planned-get",
		CheckPlan: json.RawMessage(`{"id":"7/planned-check"}`), GetPlan: json.RawMessage(`{"id":"7/planned-get"}`)}
	got = encode(imageFetch(recorded, busybox, origin, 5, "node-1", imageFetchOf{digest: "sha256:abc"}))
	if len(got) != len(want) || !strings.Contains(got[0], `"plan":{"id":"7/planned-check"}`) || !strings.Contains(got[1], `"plan":{"id":"7/planned-get"}`) ||
		!strings.Contains(got[2], `"id":"7/planned-check"`) || !strings.Contains(got[len(got)-1], `"id":"7/planned-get"`) {
		t.Errorf("the plan the compiler recorded is not the one shown:\n%s", strings.Join(got, "\n"))
	}
	if strings.Contains(strings.Join(got, "\n"), "s3cret") {
		t.Error("the image's source is in its events")
	}

	pinned := busybox
	pinned.ImageResource = &concourse.ImageResource{Type: "docker-image", Source: concourse.Source{"repository": "busybox"}, Version: concourse.Version{"digest": "sha256:def"}}
	got = encode(imageFetch(task, pinned, origin, 5, "node-1", imageFetchOf{}))
	if len(got) != 5 || !strings.HasPrefix(got[0], `image-get {"time":5,"origin":{"id":"7"},"plan":{"id":"7/image-get","get":{"name":"image","type":"docker-image","version":{"digest":"sha256:def"}}}}`) ||
		!strings.HasSuffix(got[4], `"version":{"digest":"sha256:def"}}`) {
		t.Errorf("a pinned version, no check, the pinned version fetched:\n%s", strings.Join(got, "\n"))
	}

	artifact := runspec.Spec{Mode: runspec.ModeTask, PlanID: "7", Task: &runspec.Task{ImageArtifact: true}}
	mock := concourse.TaskConfig{ImageResource: &concourse.ImageResource{Type: "mock", Source: concourse.Source{"mirror_self": true}}}
	for name, evs := range map[string][]event.Event{
		"an artifact":  imageFetch(artifact, busybox, origin, 5, "node-1", imageFetchOf{digest: "sha256:abc"}),
		"a mock image": imageFetch(task, mock, origin, 5, "node-1", imageFetchOf{}),
		"a rootfs_uri": imageFetch(task, concourse.TaskConfig{RootfsURI: "docker:///busybox"}, origin, 5, "node-1", imageFetchOf{}),
		"not a task's": imageFetch(runspec.Spec{Mode: runspec.ModeGet, PlanID: "7"}, busybox, origin, 5, "node-1", imageFetchOf{}),
	} {
		if len(evs) != 0 {
			t.Errorf("%s: %d image events, want none", name, len(evs))
		}
	}
}

// TestImageDigest: the digest of a pull is the repository digest of the step's image ID,
// from the TaskRun or else the pod; an image with none (loaded, not pulled) has none.
func TestImageDigest(t *testing.T) {
	tr := func(id string) *v1.TaskRun {
		r := &v1.TaskRun{}
		r.Status.Steps = []v1.StepState{{Name: runspec.StepInstall, ImageID: "ghcr.io/runner@sha256:000"}, {Name: runspec.StepRun, Container: runspec.StepContainer, ImageID: id}}
		return r
	}
	pod := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: runspec.StepContainer, ImageID: "10.88.0.1:5000/busybox@sha256:222"}}}}
	for _, tt := range []struct {
		name string
		tr   *v1.TaskRun
		pod  *corev1.Pod
		want string
	}{
		{"the TaskRun's", tr("docker.io/library/busybox@sha256:111"), pod, "sha256:111"},
		{"the pod's", tr(""), pod, "sha256:222"},
		{"an image ID only", tr("sha256:333"), nil, ""},
		{"nothing yet", tr(""), nil, ""},
	} {
		if got := imageDigest(tt.tr, tt.pod); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestTypeImageFetch: a get, put or check of a custom type whose image the node pulled
// shows that image's check and get right after its initialize, as Concourse fetches the
// type's image there, without image-check or image-get; a base type's shows none.
func TestTypeImageFetch(t *testing.T) {
	pulled := &runspec.PulledImage{Name: "slack", CheckID: "3/image-check", GetID: "3/image-get"}
	for _, tt := range []struct {
		mode   runspec.Mode
		pulled *runspec.PulledImage
		want   string
	}{
		{runspec.ModeGet, pulled, "3 initialize-get, 3/image-check initialize-check, 3/image-check selected-worker, 3/image-check start, 3/image-check finish, " +
			"3/image-get initialize-get, 3/image-get start-get, 3/image-get selected-worker, 3/image-get finish-get, 3 start-get, 3 selected-worker"},
		{runspec.ModePut, &runspec.PulledImage{Name: "slack", GetID: "3/image-get"}, "3 initialize-put, " +
			"3/image-get initialize-get, 3/image-get start-get, 3/image-get selected-worker, 3/image-get finish-get, 3 selected-worker, 3 start-put"},
		{runspec.ModeCheck, nil, "3 initialize-check, 3 selected-worker, 3 start"},
	} {
		m := &mapper{after: &Cursor{}}
		spec := runspec.Spec{Mode: tt.mode, PlanID: "3", Name: "alert", PulledImage: tt.pulled}
		m.head("step", spec, event.Origin{ID: "3"}, 5, "node-1", concourse.TaskConfig{}, imageFetchOf{digest: "sha256:abc"}, true, false)
		var got []string
		for _, e := range m.events {
			var v struct {
				Data struct {
					Origin  struct{ ID string }
					Name    string
					Version map[string]string
				}
				Event string
			}
			decodeEvent(t, e.Event, &v)
			got = append(got, v.Data.Origin.ID+" "+v.Event)
			switch {
			case v.Event == "initialize-check" && v.Data.Origin.ID != "3" && v.Data.Name != "slack":
				t.Errorf("%s: the image's check is named %q, want the type's", tt.mode, v.Data.Name)
			case v.Event == "finish-get" && v.Data.Version["digest"] != "sha256:abc":
				t.Errorf("%s: the image's get fetched %v, want the digest pulled", tt.mode, v.Data.Version)
			}
		}
		if s := strings.Join(got, ", "); s != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.mode, s, tt.want)
		}
	}
}

// TestFetchedBefore: a step's image check is found done when a step it runs after, which
// started, showed the check of the same image; not for a step beside it, one that never
// started, or another image.
func TestFetchedBefore(t *testing.T) {
	task := func(source string, started bool) *StepObservation {
		tr := &v1.TaskRun{Spec: v1.TaskRunSpec{Params: v1.Params{{Name: runspec.ParamSpec, Value: *v1.NewStructuredValues("")}}}}
		cfg := map[string]any{"platform": "linux", "image_resource": map[string]any{"type": "registry-image", "source": map[string]any{"repository": source}}}
		setSpec(t, tr, runspec.Spec{Mode: runspec.ModeTask, PlanID: source, Task: &runspec.Task{Config: cfg}})
		if started {
			tr.Status.Steps = []v1.StepState{{Name: runspec.StepRun, Container: runspec.StepContainer,
				ContainerState: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}
		return &StepObservation{TaskRun: tr}
	}
	m := &mapper{obs: Observation{Steps: map[string]*StepObservation{
		"first":   task("busybox", true),
		"beside":  task("busybox", true),
		"skipped": task("busybox", false),
		"other":   task("alpine", true),
	}}, deps: map[string][]string{
		"first": nil, "beside": nil, "other": nil, "skipped": {"other"},
		"second":       {"first"},
		"after-beside": {"join"}, "join": {"beside", "other"},
		"after-other": {"skipped"},
	}}
	busybox := imageKey(runspec.Spec{Mode: runspec.ModeTask, Task: &runspec.Task{}},
		concourse.TaskConfig{ImageResource: &concourse.ImageResource{Type: "registry-image", Source: concourse.Source{"repository": "busybox"}}})
	for _, tt := range []struct {
		name string
		key  string
		want bool
	}{
		{"second", busybox, true},
		{"after-beside", busybox, true}, // through a join
		{"first", busybox, false},
		{"beside", busybox, false},
		{"after-other", busybox, false}, // its busybox ancestor never started
		{"second", "", false},
	} {
		if got := m.fetchedBefore(tt.name, tt.key); got != tt.want {
			t.Errorf("%s, key %q: fetched before %v, want %v", tt.name, tt.key, got, tt.want)
		}
	}
	// A pinned version has no check to find done; a custom type's image is its type's.
	pinned := concourse.TaskConfig{ImageResource: &concourse.ImageResource{Type: "registry-image", Source: concourse.Source{"repository": "busybox"}, Version: concourse.Version{"digest": "sha256:1"}}}
	if k := imageKey(runspec.Spec{Mode: runspec.ModeTask, Task: &runspec.Task{}}, pinned); k != "" {
		t.Errorf("a pinned image's key %q, want none", k)
	}
	typed := runspec.Spec{Mode: runspec.ModeGet, PulledImage: &runspec.PulledImage{Name: "slack", CheckID: "1/image-check", GetID: "1/image-get"}}
	if k := imageKey(typed, concourse.TaskConfig{}); k == "" || k == busybox {
		t.Errorf("a custom type's image key %q", k)
	}
}

// TestTaskImageFetchAnnounced: the first step of the fetch of a task's image that steps of
// the build do (runspec.Spec.ImagePlans) begins with Concourse's image-check and
// image-get on the task's origin, carrying their plans, whether its pod waits for a node
// (under the same keys as the head it later gets) or runs; other steps announce nothing.
func TestTaskImageFetchAnnounced(t *testing.T) {
	checkPlan := json.RawMessage(`{"id":"7/image-check","check":{"name":"image","type":"custom"}}`)
	getPlan := json.RawMessage(`{"id":"7/image-get","get":{"name":"image","type":"custom"}}`)
	tr := &v1.TaskRun{}
	describe := func(evs []Event) []string {
		var out []string
		for _, e := range evs {
			var v struct {
				Data struct {
					Origin struct{ ID string }
					Plan   json.RawMessage
				}
				Event string
			}
			decodeEvent(t, e.Event, &v)
			out = append(out, strings.TrimSpace(fmt.Sprintf("%d %s %s %s", e.Key.N, v.Data.Origin.ID, v.Event, v.Data.Plan)))
		}
		return out
	}
	announced := []string{"0 7 image-check " + string(checkPlan), "1 7 image-get " + string(getPlan)}
	for _, tt := range []struct {
		spec         runspec.Spec
		waiting, ran []string
	}{
		{runspec.Spec{Mode: runspec.ModeCheck, PlanID: "7/image-check", Name: "image", ImagePlans: []json.RawMessage{checkPlan, getPlan}},
			append(announced, "2 7/image-check initialize-check"),
			append(announced, "2 7/image-check initialize-check", "3 7/image-check selected-worker", "4 7/image-check start")},
		{runspec.Spec{Mode: runspec.ModeGet, PlanID: "7/image-get", Name: "image", ImagePlans: []json.RawMessage{getPlan}},
			[]string{"0 7 image-get " + string(getPlan), "1 7/image-get initialize-get", "2 7/image-get start-get"},
			[]string{"0 7 image-get " + string(getPlan), "1 7/image-get initialize-get", "2 7/image-get start-get", "3 7/image-get selected-worker"}},
		{runspec.Spec{Mode: runspec.ModeGet, PlanID: "3", Name: "repo"},
			[]string{"0 3 initialize-get", "1 3 start-get"},
			[]string{"0 3 initialize-get", "1 3 start-get", "2 3 selected-worker"}},
	} {
		origin := event.Origin{ID: concourse.PlanID(tt.spec.PlanID)}
		m := &mapper{after: &Cursor{}}
		m.waitingHead("step", tt.spec, origin, tr)
		if diff := cmp.Diff(tt.waiting, describe(m.events)); diff != "" {
			t.Errorf("%s waiting for a node (-want +got):\n%s", tt.spec.PlanID, diff)
		}
		m = &mapper{after: &Cursor{}}
		m.head("step", tt.spec, origin, 0, "node-1", concourse.TaskConfig{}, imageFetchOf{}, true, false)
		if diff := cmp.Diff(tt.ran, describe(m.events)); diff != "" {
			t.Errorf("%s running (-want +got):\n%s", tt.spec.PlanID, diff)
		}
	}
}

// decodeEvent decodes an event's envelope, as a consumer of the stream reads it, into v.
func decodeEvent(t *testing.T, e event.Event, v any) {
	t.Helper()
	env, err := event.Marshal(e, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(env, v); err != nil {
		t.Fatal(err)
	}
}
