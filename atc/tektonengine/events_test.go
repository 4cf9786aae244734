package tektonengine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/atc/db/dbfakes"
	atcevent "github.com/concourse/concourse/atc/event"
	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
)

// TestEveryEventReachesTheATC converts one event of every type tektonrun's events have
// and compares the JSON the ATC stores with ours: nothing lost, nothing added.
func TestEveryEventReachesTheATC(t *testing.T) {
	o := event.Origin{ID: "2"}
	plan := json.RawMessage(`{"id":"2/image-check","check":{"name":"image","type":"registry-image"}}`)
	events := []event.Event{
		event.Status{Status: event.BuildStatusSucceeded, Time: 1},
		event.Log{Time: 1, Origin: event.Origin{ID: "2", Source: event.OriginSourceStderr}, Payload: "x\n"},
		event.Error{Message: "interrupted", Origin: o, Time: 1},
		event.Initialize{Origin: o, Time: 1},
		event.Start{Origin: o, Time: 1},
		event.Finish{Origin: o, Time: 1, Succeeded: true},
		event.InitializeTask{Time: 1, Origin: o, TaskConfig: unitConfig},
		event.StartTask{Time: 1, Origin: o, TaskConfig: event.TaskConfig{Platform: "linux", Run: event.TaskRunConfig{Path: "sh", Dir: "src"},
			Inputs: []event.TaskInputConfig{{Name: "src", Path: "in"}}}},
		event.FinishTask{Time: 1, ExitStatus: 42, Origin: o},
		event.InitializeGet{Origin: o, Time: 1},
		event.StartGet{Origin: o, Time: 1},
		event.FinishGet{Origin: o, Time: 1, ExitStatus: 0, FetchedVersion: concourse.Version{"ref": "abc"},
			FetchedMetadata: concourse.Metadata{{Name: "author", Value: "me"}}},
		event.InitializePut{Origin: o, Time: 1},
		event.StartPut{Origin: o, Time: 1},
		event.FinishPut{Origin: o, Time: 1, CreatedVersion: concourse.Version{"v": "2"}, CreatedMetadata: concourse.Metadata{{Name: "n", Value: "v"}}},
		event.InitializeCheck{Origin: o, Time: 1, Name: "repo"},
		event.SelectedWorker{Time: 1, Origin: o, WorkerName: "labnode"},
		event.WaitingForWorker{Time: 1, Origin: o},
		event.StreamingVolume{Time: 1, Origin: o, Volume: "v", SourceWorker: "a", DestWorker: "b"},
		event.WaitingForStreamedVolume{Time: 1, Origin: o, Volume: "v", DestWorker: "b"},
		event.ImageCheck{Time: 1, Origin: o, Plan: plan},
		event.ImageGet{Time: 1, Origin: o, Plan: plan},
		event.SetPipelineChanged{Origin: o, Changed: true},
		event.AcrossSubsteps{Time: 1, Origin: o, Substeps: []json.RawMessage{json.RawMessage(`{"step":{"id":"3"},"values":["a"]}`)}},
	}
	types := map[event.EventType]bool{}
	for _, e := range events {
		types[e.EventType()] = true
		t.Run(string(e.EventType()), func(t *testing.T) {
			out, err := atcEvent(e)
			if err != nil {
				t.Fatal(err)
			}
			if string(out.EventType()) != string(e.EventType()) {
				t.Errorf("type %s, want %s", out.EventType(), e.EventType())
			}
			if diff := cmp.Diff(decode(t, e), decode(t, out)); diff != "" {
				t.Errorf("the ATC's JSON (-ours +the ATC's):\n%s", diff)
			}
		})
	}
	if len(types) != 24 {
		t.Errorf("%d event types tried, want the 24 of concourse/event", len(types))
	}
}

func decode(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestReadSaved(t *testing.T) {
	a := atcevent.Log{Time: 1, Origin: atcevent.Origin{ID: "1", Source: atcevent.OriginSourceStdout}, Payload: "a\n"}
	b := atcevent.FinishTask{Time: 2, Origin: atcevent.Origin{ID: "1"}}

	t.Run("a running build: until the source is quiet", func(t *testing.T) {
		build := new(dbfakes.FakeBuild)
		source := newEventSource(t, a, a, b)
		build.EventsReturns(source, nil)
		start := time.Now()
		saved, err := readSaved(context.Background(), build, 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("took %s", took)
		}
		for _, want := range []struct {
			e    atc.Event
			take bool
		}{{a, true}, {b, true}, {a, true}, {a, false}, {b, false}} {
			got, err := saved.take(want.e)
			if err != nil {
				t.Fatal(err)
			}
			if got != want.take {
				t.Errorf("take %#v: %t, want %t", want.e, got, want.take)
			}
		}
		select {
		case <-source.closed:
		default:
			t.Error("the event source was not closed")
		}
	})

	t.Run("a build that ended: to the end of its events", func(t *testing.T) {
		build := new(dbfakes.FakeBuild)
		source := new(dbfakes.FakeEventSource)
		payload := json.RawMessage(`{"time":2,"exit_status":0,"origin":{"id":"1"}}`)
		source.NextReturnsOnCall(0, atcevent.Envelope{Data: &payload, Event: "finish-task", Version: "4.0"}, nil)
		source.NextReturnsOnCall(1, atcevent.Envelope{}, db.ErrEndOfBuildEventStream)
		build.EventsReturns(source, nil)
		saved, err := readSaved(context.Background(), build, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := saved.take(b); !got {
			t.Errorf("the saved finish-task was not read: %v", saved)
		}
	})
}
