package render

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
)

func TestJSONWriterLines(t *testing.T) {
	var out bytes.Buffer
	j := NewJSONWriter(&out, 7)
	for _, e := range []event.Event{
		event.Status{Status: event.BuildStatusStarted, Time: t0},
		logEvent("2", event.OriginSourceStdout, "a <b> & \"c\"\n"),
	} {
		if err := j.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	// Field order, the string event_id and the escaping are the ATC's (json.Marshal of
	// atc/event.Envelope).
	want := `{"data":{"status":"started","time":1700051696},"event":"status","version":"1.0","event_id":"7"}` + "\n" +
		`{"data":{"time":1700051696,"origin":{"id":"2","source":"stdout"},"payload":"a \u003cb\u003e \u0026 \"c\"\n"},"event":"log","version":"5.1","event_id":"8"}` + "\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestJSONWriterRoundTrip(t *testing.T) {
	var out bytes.Buffer
	j := NewJSONWriter(&out, 0)
	for _, e := range build {
		if err := j.Write(e); err != nil {
			t.Fatalf("Write(%#v): %v", e, err)
		}
	}
	lines := strings.SplitAfter(out.String(), "\n")
	if last := lines[len(lines)-1]; last != "" {
		t.Fatalf("output does not end with a newline: %q", last)
	}
	lines = lines[:len(lines)-1]
	if len(lines) != len(build) {
		t.Fatalf("%d lines for %d events", len(lines), len(build))
	}
	for i, line := range lines {
		got, env, err := event.Unmarshal([]byte(line))
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if env.EventID != strconv.Itoa(i) {
			t.Errorf("line %d: event_id %q", i, env.EventID)
		}
		if diff := cmp.Diff(build[i], got); diff != "" {
			t.Errorf("line %d (-want +got):\n%s", i, diff)
		}
	}
}

func TestJSONWriterErrorKeepsNumber(t *testing.T) {
	var out bytes.Buffer
	j := NewJSONWriter(&out, 3)
	if err := j.Write(nil); err == nil {
		t.Fatal("Write(nil) succeeded")
	}
	if err := j.Write(event.Status{Status: event.BuildStatusSucceeded, Time: t0}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), `"event_id":"3"}`+"\n") {
		t.Errorf("output %q, want event_id 3", out.String())
	}

	err := NewJSONWriter(failingWriter{}, 0).Write(event.Status{Status: event.BuildStatusSucceeded})
	if !errors.Is(err, errDiskFull) {
		t.Errorf("Write() = %v, want an error wrapping %v", err, errDiskFull)
	}
}
