package pvc

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	tektonfake "github.com/tektoncd/pipeline/pkg/client/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// Storage classes of the fake cluster: fast has a CSI driver and binds at once, slow
// has none.
func storageClasses(defaultClass string) []runtime.Object {
	immediate := storagev1.VolumeBindingImmediate
	late := storagev1.VolumeBindingWaitForFirstConsumer
	fast := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "fast.csi.example.com", VolumeBindingMode: &immediate}
	slow := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "slow"}, Provisioner: "example.com/hostpath", VolumeBindingMode: &late}
	for _, sc := range []*storagev1.StorageClass{fast, slow} {
		if sc.Name == defaultClass {
			sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
		}
	}
	return []runtime.Object{fast, slow, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "fast.csi.example.com"}}}
}

// fakeCluster holds builds in namespace ci.
func fakeCluster(t *testing.T, claims []corev1.PersistentVolumeClaim, runs []v1.PipelineRun, taskRuns []v1.TaskRun, objects ...runtime.Object) (*k8sfake.Clientset, *tektonfake.Clientset) {
	t.Helper()
	for i := range claims {
		claims[i].Namespace = "ci"
		objects = append(objects, &claims[i])
	}
	var tekton []runtime.Object
	for i := range runs {
		runs[i].Namespace = "ci"
		tekton = append(tekton, &runs[i])
	}
	for i := range taskRuns {
		taskRuns[i].Namespace = "ci"
		tekton = append(tekton, &taskRuns[i])
	}
	return k8sfake.NewClientset(objects...), tektonfake.NewSimpleClientset(tekton...)
}

// quickly makes Prepare's waits short.
func quickly(t *testing.T) {
	c, d, p := cloneWait, deleteWait, pollEvery
	cloneWait, deleteWait, pollEvery = 50*time.Millisecond, time.Second, 5*time.Millisecond
	t.Cleanup(func() { cloneWait, deleteWait, pollEvery = c, d, p })
}

func getClaim(t *testing.T, kube *k8sfake.Clientset, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	c, err := kube.CoreV1().PersistentVolumeClaims("ci").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPrepare(t *testing.T) {
	finished := []build{
		{job: "unit", n: "1", outcome: "succeeded", ended: 10},
		{job: "unit", n: "2", outcome: "failed", ended: 20, class: "slow"},
	}
	const caveat = "task caches start empty in this build: "
	tests := []struct {
		name, class, defaultClass string
		// bigger makes the source volume's capacity 5Gi.
		bigger       bool
		wantSource   string
		wantClass    string
		wantSize     string
		wantWarnings []string
	}{
		{name: "cloned from the last clean build of its class", class: "fast", wantSource: "app-unit-1-build", wantClass: "fast", wantSize: "2Gi"},
		{name: "the default class", defaultClass: "fast", wantSource: "app-unit-1-build", wantClass: "fast", wantSize: "2Gi"},
		{name: "as large as its source", class: "fast", bigger: true, wantSource: "app-unit-1-build", wantClass: "fast", wantSize: "5Gi"},
		{name: "a class that cannot clone", class: "slow", wantClass: "slow", wantSize: "2Gi", wantWarnings: []string{
			caveat + "storage class slow (provisioner example.com/hostpath) has no CSI driver, so its volumes cannot be cloned; if they can, annotate it concourse-ci.org/clone=true",
		}},
		{name: "no class at all", wantSize: "2Gi", wantWarnings: []string{caveat + "there is no default storage class, and none was named"}},
		{name: "a class that is not there", class: "gone", wantClass: "gone", wantSize: "2Gi", wantWarnings: []string{
			caveat + `reading storage class gone: storageclasses.storage.k8s.io "gone" not found`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			quickly(t)
			claims, runs, taskRuns := world(finished)
			if tt.bigger {
				claims[0].Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}
			}
			kube, tekton := fakeCluster(t, claims, runs, taskRuns, storageClasses(tt.defaultClass)...)
			run := translated(t, "unit", "3", tt.class)
			name, warnings, err := Prepare(context.Background(), kube, tekton, "ci", run)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantWarnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			got := getClaim(t, kube, name)
			want := BuildClaim(translated(t, "unit", "3", tt.class), resource.MustParse(tt.wantSize), tt.wantClass, tt.wantSource)
			if diff := cmp.Diff(want.Spec, got.Spec); diff != "" || name != "app-unit-3-build" {
				t.Errorf("claim %s (-want +got):\n%s", name, diff)
			}
			if diff := cmp.Diff(want.Annotations, got.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if ws := workspace(run); ws.PersistentVolumeClaim == nil || ws.PersistentVolumeClaim.ClaimName != name || ws.VolumeClaimTemplate != nil {
				t.Errorf("the run's build workspace is %+v", ws)
			}
		})
	}
}

func TestPrepareIsIdempotent(t *testing.T) {
	quickly(t)
	claims, runs, taskRuns := world([]build{{job: "unit", n: "1", outcome: "succeeded"}})
	kube, tekton := fakeCluster(t, claims, runs, taskRuns, storageClasses("fast")...)
	ctx := context.Background()
	run := translated(t, "unit", "2", "")
	first, _, err := Prepare(ctx, kube, tekton, "ci", run)
	if err != nil {
		t.Fatal(err)
	}
	// The same run again, and the run translated again (a retry of the whole submit).
	for _, r := range []*v1.PipelineRun{run, translated(t, "unit", "2", "")} {
		name, warnings, err := Prepare(ctx, kube, tekton, "ci", r)
		if err != nil || name != first || len(warnings) > 0 {
			t.Errorf("Prepare again = %q, %q, %v; want %q", name, warnings, err, first)
		}
	}
	list, _ := kube.CoreV1().PersistentVolumeClaims("ci").List(ctx, metav1.ListOptions{})
	if len(list.Items) != 2 {
		t.Errorf("%d claims, want 2", len(list.Items))
	}
}

func TestPrepareWillNotTakeAnotherClaim(t *testing.T) {
	quickly(t)
	other := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "app-unit-2-build", Namespace: "ci", Labels: map[string]string{"app": "db"}}}
	kube, tekton := fakeCluster(t, nil, nil, nil, append(storageClasses("fast"), other)...)
	_, _, err := Prepare(context.Background(), kube, tekton, "ci", translated(t, "unit", "2", ""))
	if err == nil || !strings.Contains(err.Error(), "PVC app-unit-2-build exists and is not this build's volume") {
		t.Errorf("Prepare over another PVC: %v", err)
	}
}

// TestPrepareWaitsForAClaimBeingDeleted: the volume of a deleted run of the same name
// (a pipeline destroyed and set again numbers its builds from 1 again) goes once its
// pods have. Prepare neither takes it nor fails: it waits, and makes the build its own.
func TestPrepareWaitsForAClaimBeingDeleted(t *testing.T) {
	quickly(t)
	for _, sameBuild := range []bool{false, true} {
		t.Run(fmt.Sprintf("labelled as this build: %t", sameBuild), func(t *testing.T) {
			claims, runs, taskRuns := world([]build{{job: "unit", n: "1", outcome: "succeeded"}})
			dying := claims[0].DeepCopy()
			if !sameBuild {
				dying.Labels[runspec.LabelJob] = "gone"
			}
			dying.UID, dying.Finalizers = "dying", []string{"kubernetes.io/pvc-protection"}
			dying.DeletionTimestamp = &metav1.Time{Time: time.Unix(100, 0)}
			kube, tekton := fakeCluster(t, []corev1.PersistentVolumeClaim{*dying}, runs, taskRuns, storageClasses("fast")...)
			reads := 0
			kube.PrependReactor("get", "persistentvolumeclaims", func(action k8stesting.Action) (bool, runtime.Object, error) {
				if reads++; reads == 3 {
					// Its pods are gone: the claim goes.
					if err := kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), "ci", dying.Name); err != nil {
						return true, nil, err
					}
				}
				return false, nil, nil
			})
			name, _, err := Prepare(context.Background(), kube, tekton, "ci", translated(t, "unit", "1", "fast"))
			if err != nil {
				t.Fatal(err)
			}
			if c := getClaim(t, kube, name); c.UID == "dying" || c.DeletionTimestamp != nil || c.Spec.DataSource != nil {
				t.Errorf("the build volume is the one being deleted, or cloned from it: %s, %v", c.UID, c.Spec.DataSource)
			}
			if reads < 3 {
				t.Errorf("the claim was read %d times: Prepare did not wait for it to go", reads)
			}
		})
	}

	// One that does not go in time: the error says so.
	claims, runs, taskRuns := world([]build{{job: "unit", n: "1", outcome: "succeeded"}})
	claims[0].Finalizers, claims[0].DeletionTimestamp = []string{"example.com/hold"}, &metav1.Time{Time: time.Unix(100, 0)}
	kube, tekton := fakeCluster(t, claims, runs, taskRuns, storageClasses("fast")...)
	_, _, err := Prepare(context.Background(), kube, tekton, "ci", translated(t, "unit", "1", "fast"))
	if err == nil || !strings.Contains(err.Error(), "build volume app-unit-1-build was still being deleted after 1s: try again once it is gone") {
		t.Errorf("Prepare over a claim that is never deleted: %v", err)
	}
}

// TestPrepareAfterAFailedClone has a driver fail every clone, as one without the
// CLONE_VOLUME capability does, with an event.
func TestPrepareAfterAFailedClone(t *testing.T) {
	quickly(t)
	claims, runs, taskRuns := world([]build{{job: "unit", n: "1", outcome: "succeeded"}})
	kube, tekton := fakeCluster(t, claims, runs, taskRuns, storageClasses("fast")...)
	made := 0
	kube.PrependReactor("create", "persistentvolumeclaims", func(action k8stesting.Action) (bool, runtime.Object, error) {
		c := action.(k8stesting.CreateAction).GetObject().(*corev1.PersistentVolumeClaim)
		made++
		c.UID = types.UID(fmt.Sprintf("claim-%d", made))
		if c.Spec.DataSource != nil {
			event := &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Name: c.Name + ".1", Namespace: "ci"},
				InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Name: c.Name, UID: c.UID},
				Reason:         "ProvisioningFailed",
				Message:        "CSI driver does not support clone operations",
			}
			if err := kube.Tracker().Add(event); err != nil {
				return true, nil, err
			}
		}
		return false, nil, nil
	})
	name, warnings, err := Prepare(context.Background(), kube, tekton, "ci", translated(t, "unit", "2", ""))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"task caches start empty in this build: cloning app-unit-1-build failed (CSI driver does not support clone operations); if storage class fast cannot clone volumes, annotate it concourse-ci.org/clone=false"}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if c := getClaim(t, kube, name); c.Spec.DataSource != nil || c.UID != "claim-2" || c.Annotations[AnnotationClonedFrom] != "" {
		t.Errorf("after a failed clone the build volume is %s, from %v", c.UID, c.Spec.DataSource)
	}
}

func TestOwn(t *testing.T) {
	ctx := context.Background()
	run := translated(t, "unit", "2", "")
	claim := BuildClaim(run, resource.MustParse("1Gi"), "", "")
	kube, _ := fakeCluster(t, []corev1.PersistentVolumeClaim{*claim}, nil, nil)
	if err := Own(ctx, kube, "ci", claim.Name, run); err == nil {
		t.Error("Own before the run has a UID: no error")
	}
	run.UID = "u-2"
	for range 2 {
		if err := Own(ctx, kube, "ci", claim.Name, run); err != nil {
			t.Fatal(err)
		}
	}
	got := getClaim(t, kube, claim.Name).OwnerReferences
	if diff := cmp.Diff([]metav1.OwnerReference{OwnerReference(run)}, got); diff != "" {
		t.Errorf("owners (-want +got):\n%s", diff)
	}
}
