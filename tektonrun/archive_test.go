package tektonrun

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/internal/recordedbuilds"
)

// recordedTestdata holds the builds recorded from a real cluster.
const recordedTestdata = "buildevents/testdata"

// loadRecorded puts a recorded build into the cluster: its run, TaskRuns and pods, and
// its pods' logs, ended.
func (c *memCluster) loadRecorded(t *testing.T, dir string) string {
	t.Helper()
	b := recordedbuilds.Load(t, dir)
	b.Run.Namespace = c.namespace
	if err := c.put(b.Run); err != nil {
		t.Fatal(err)
	}
	for _, s := range b.Steps {
		s.TaskRun.Namespace = c.namespace
		if err := c.put(s.TaskRun); err != nil {
			t.Fatal(err)
		}
		if s.Pod == nil {
			continue
		}
		s.Pod.Namespace = c.namespace
		if err := c.put(s.Pod); err != nil {
			t.Fatal(err)
		}
		if s.Log != nil {
			c.logs.add(s.Pod.Name, s.Log)
			c.logs.end(s.Pod.Name)
		}
	}
	return b.Run.Name
}

// follow follows the build from after to its end.
func follow(t *testing.T, cl *Client, run string, after buildevents.Cursor) ([]buildevents.Event, event.BuildStatus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var events []buildevents.Event
	status, err := cl.Follow(ctx, run, after, func(e buildevents.Event) error {
		events = append(events, e)
		return nil
	})
	if err != nil {
		t.Fatalf("following %s: %v", run, err)
	}
	return events, status
}

// shown is each event as its key and the ATC's envelope: what an archive keeps of it.
func shown(t *testing.T, events []buildevents.Event) []string {
	t.Helper()
	out := make([]string, len(events))
	for i, e := range events {
		env, err := event.Marshal(e.Event, 0)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = e.Key.String() + " " + string(env)
	}
	return out
}

// TestArchive archives each recorded build and deletes its pods: following it again, from
// its start or from any point, replays what following it live gave, logs and all.
func TestArchive(t *testing.T) {
	for _, dir := range recordedbuilds.Cases(t, recordedTestdata) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			c := newMemCluster("ci")
			run := c.loadRecorded(t, dir)
			live := c.client()
			defer live.Close()
			want, wantStatus := follow(t, live, run, buildevents.Cursor{})
			if archived, err := live.Archived(context.Background(), run); err != nil || archived {
				t.Fatalf("Archived before Archive = %v, %v", archived, err)
			}
			status, err := live.Archive(context.Background(), run)
			if err != nil || status != wantStatus {
				t.Fatalf("Archive = %q, %v; want %q", status, err, wantStatus)
			}
			cms, err := c.kube.CoreV1().ConfigMaps("ci").List(context.Background(), metav1.ListOptions{})
			if err != nil || len(cms.Items) != 1 {
				t.Fatalf("ConfigMaps: %d, %v; want the archive's one", len(cms.Items), err)
			}
			if owners := cms.Items[0].OwnerReferences; len(owners) != 1 || owners[0].Name != run || owners[0].Kind != "PipelineRun" {
				t.Errorf("the archive's owners: %+v", owners)
			}
			pods, _ := c.kube.CoreV1().Pods("ci").List(context.Background(), metav1.ListOptions{})
			for i := range pods.Items {
				if err := c.remove(&pods.Items[i]); err != nil {
					t.Fatal(err)
				}
			}
			c.logs = &memLogs{logs: map[string]*memLog{}}

			later := c.client()
			defer later.Close()
			got, gotStatus := follow(t, later, run, buildevents.Cursor{})
			if diff := cmp.Diff(shown(t, want), shown(t, got)); diff != "" || gotStatus != wantStatus {
				t.Fatalf("replayed %q, want %q; events (-want +got):\n%s", gotStatus, wantStatus, diff)
			}
			for k := range want {
				var after buildevents.Cursor
				for _, e := range want[:k] {
					if err := after.Advance(e.Key); err != nil {
						t.Fatal(err)
					}
				}
				rest, _ := follow(t, later, run, after)
				if diff := cmp.Diff(shown(t, want[k:]), shown(t, rest)); diff != "" {
					t.Fatalf("after %d events (-want +got):\n%s", k, diff)
				}
			}
		})
	}
}

// TestArchiveRunning refuses to archive a build that has not ended.
func TestArchiveRunning(t *testing.T) {
	c := newMemCluster("ci")
	run := c.loadRecorded(t, recordedbuilds.Cases(t, recordedTestdata)[0])
	pr, err := c.tekton.TektonV1().PipelineRuns("ci").Get(context.Background(), run, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pr.Status.Conditions = nil
	if err := c.put(pr); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client().Archive(context.Background(), run); err == nil || !strings.Contains(err.Error(), "has not ended") {
		t.Errorf("Archive of a running build = %v", err)
	}
}

// TestArchiveParts splits a large stream into ConfigMap-sized parts, in order.
func TestArchiveParts(t *testing.T) {
	var events []buildevents.Event
	for i := range 40 {
		buf := make([]byte, 32<<10)
		rand.Read(buf)
		events = append(events, buildevents.Event{Key: buildevents.Key{Step: "task-unit", Part: buildevents.PartLog, N: i}, Event: event.Log{Payload: hex.EncodeToString(buf)}})
	}
	parts, err := encodeArchive(events)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) < 2 {
		t.Fatalf("%d part(s) for 1.3 MB of gzipped hex", len(parts))
	}
	var got []buildevents.Event
	for _, p := range parts {
		if len(p) > partLimit {
			t.Errorf("a part of %d bytes", len(p))
		}
		events, err := decodePart(p)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, events...)
	}
	if diff := cmp.Diff(shown(t, events), shown(t, got)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if got[39].Event.(event.Log).Payload != events[39].Event.(event.Log).Payload {
		t.Errorf("the last event's payload differs")
	}
}

// TestArchiveKeepsThePipelineToSet: a set_pipeline step's pipeline, no event of
// Concourse's, comes back from the archive as it was followed, so that a build replayed
// once its pods are gone says what it set.
func TestArchiveKeepsThePipelineToSet(t *testing.T) {
	events := []buildevents.Event{
		{Key: buildevents.Key{Step: "set-pipeline-child", Part: buildevents.PartLog, N: 0}, Pipeline: &buildevents.PipelineToSet{
			Origin: event.Origin{ID: "3"}, Time: 1700000000,
			PipelineToSet: runspec.PipelineToSet{Team: "other", Pipeline: "child", InstanceVars: map[string]any{"branch": "main"},
				Config: json.RawMessage(`{"jobs":[{"name":"j","plan":[{"task":"t"}]}]}`), Warnings: []string{"a warning"}}}},
		{Key: buildevents.Key{Step: "set-pipeline-broken", Part: buildevents.PartLog, N: 0}, Pipeline: &buildevents.PipelineToSet{Origin: event.Origin{ID: "4"}, Time: 1700000001, Error: "a frame of version \"2\""}},
		{Key: buildevents.Key{Step: "set-pipeline-child", Part: buildevents.PartEnd, N: 0, Last: true}, Event: event.Finish{Origin: event.Origin{ID: "3"}, Time: 1700000002, Succeeded: true}},
	}
	parts, err := encodeArchive(events)
	if err != nil {
		t.Fatal(err)
	}
	var got []buildevents.Event
	for _, p := range parts {
		decoded, err := decodePart(p)
		if err != nil {
			t.Fatalf("decoding the archive: %v", err)
		}
		got = append(got, decoded...)
	}
	if diff := cmp.Diff(events, got); diff != "" {
		t.Errorf("replayed (-want +got):\n%s", diff)
	}
}

// An archive written before a pipeline had a place of its own in the events kept it as an
// event of a type of its own: it reads as the pipeline.
func TestArchiveReadsAnEarlierPipeline(t *testing.T) {
	line := `{"step":"set-pipeline-child","part":2,"n":0,"event":{"event":"concourse-tekton:set-pipeline","version":"1.0",` +
		`"data":{"origin":{"id":"3"},"time":1700000000,"team":"other","pipeline":"child","config":{"jobs":[]}}}}` + "\n"
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(line)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := decodePart(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := []buildevents.Event{{Key: buildevents.Key{Step: "set-pipeline-child", Part: buildevents.PartLog}, Pipeline: &buildevents.PipelineToSet{
		Origin: event.Origin{ID: "3"}, Time: 1700000000, PipelineToSet: runspec.PipelineToSet{Team: "other", Pipeline: "child", Config: json.RawMessage(`{"jobs":[]}`)}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("read (-want +got):\n%s", diff)
	}
}
