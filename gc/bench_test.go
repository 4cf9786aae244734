package gc

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	tektonfake "github.com/tektoncd/pipeline/pkg/client/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

// scale is 10,000 ended builds: 100 jobs of 100 builds that each keep 5, every build
// with a verdict, a volume and two pods (withPods).
func scale(withPods bool) Objects {
	var builds []fixture
	for j := range 100 {
		for n := 1; n <= 100; n++ {
			f := fixture{job: fmt.Sprint("job", j), n: n, outcome: runspec.Succeeded, ended: n, volume: true, retention: `{"builds":5}`}
			if withPods {
				f.pods = 2
			}
			builds = append(builds, f)
		}
	}
	return namespace(builds)
}

var scaleNow = t0.Add(200 * time.Hour)

// lists are the API's answers Sweep decodes: the list bodies of the objects.
func lists(b *testing.B, objs Objects) [][]byte {
	var out [][]byte
	for _, l := range []any{
		v1.PipelineRunList{Items: objs.Runs}, v1.TaskRunList{Items: objs.Verdicts},
		corev1.PersistentVolumeClaimList{Items: objs.Claims}, corev1.PodList{Items: objs.Pods},
	} {
		data, err := json.Marshal(l)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// BenchmarkGCBaselineDecode is the floor of a sweep of 10,000 builds: decoding the lists
// of their runs, verdicts, volumes and pods, as the client does.
func BenchmarkGCBaselineDecode(b *testing.B) {
	bodies := lists(b, scale(true))
	b.ResetTimer()
	for range b.N {
		var runs v1.PipelineRunList
		var trs v1.TaskRunList
		var claims corev1.PersistentVolumeClaimList
		var pods corev1.PodList
		for i, into := range []any{&runs, &trs, &claims, &pods} {
			if err := json.Unmarshal(bodies[i], into); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkGCPlan decides on 10,000 builds (9,500 beyond their retention) and their
// 20,000 pods and 10,000 volumes.
func BenchmarkGCPlan(b *testing.B) {
	objs := scale(true)
	b.ResetTimer()
	var d Decisions
	for range b.N {
		d = Plan(objs, DefaultRules, scaleNow)
	}
	if len(d.Delete) < 9500 {
		b.Fatalf("%d deletions, want at least the 9,500 builds beyond their retention", len(d.Delete))
	}
}

// BenchmarkGCSweep sweeps 10,000 ended builds (no pods left) from fake clientsets, and
// reports the API requests per build.
func BenchmarkGCSweep(b *testing.B) {
	for range b.N {
		b.StopTimer()
		objs := scale(false)
		var kube, tekton []runtime.Object
		for i := range objs.Claims {
			objs.Claims[i].Namespace = "ci"
			kube = append(kube, &objs.Claims[i])
		}
		for i := range objs.Runs {
			objs.Runs[i].Namespace = "ci"
			tekton = append(tekton, &objs.Runs[i])
		}
		for i := range objs.Verdicts {
			objs.Verdicts[i].Namespace = "ci"
			objs.Verdicts[i].Labels[runspec.LabelBuild] = "x"
			tekton = append(tekton, &objs.Verdicts[i])
		}
		kc, tc := k8sfake.NewClientset(kube...), tektonfake.NewSimpleClientset(tekton...)
		kc.ClearActions()
		tc.ClearActions()
		b.StartTimer()
		r, err := Sweep(context.Background(), tektonrun.NewTargetFromClients("ci", kc, tc), Options{Rules: DefaultRules, Now: func() time.Time { return scaleNow }})
		b.StopTimer()
		if err != nil || len(r.Failed) > 0 || len(r.Deleted) < 9500 {
			b.Fatalf("Sweep: %v, %d failed, %d deleted", err, len(r.Failed), len(r.Deleted))
		}
		b.ReportMetric(float64(len(kc.Actions())+len(tc.Actions()))/10000, "requests/build")
		b.StartTimer()
	}
}
