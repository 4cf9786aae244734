package tektonrun

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
)

// A build's archive is its whole event stream, kept once it has ended so that it outlives
// the pods its logs come from: what Concourse keeps of a build in its database. It is
// one or more ConfigMaps owned by the PipelineRun (they go when the build goes), each
// holding a gzipped part of the events as JSON lines, keys and envelopes, in order. The
// events are those Follow emitted: already redacted. The first ConfigMap, written last,
// says how many there are: while it is missing the build has no archive.
const (
	// LabelEventsOf on an archive's ConfigMaps is the name of the build's PipelineRun.
	LabelEventsOf = runspec.LabelPrefix + "events-of"
	// annotationEventParts on the first ConfigMap is how many the archive has.
	annotationEventParts = runspec.LabelPrefix + "event-parts"
	// annotationEventStatus on the first ConfigMap is the build's final status.
	annotationEventStatus = runspec.LabelPrefix + "status"
	eventsKey             = "events.jsonl.gz"
	// partLimit is the most compressed bytes one ConfigMap holds: the API server takes
	// objects of up to about 1.5 MB, and a ConfigMap's data at most 1 MiB.
	partLimit = 768 << 10
)

// archiveName is the name of the archive's part i of the build run.
func archiveName(run string, i int) string {
	if i == 0 {
		return run + "-events"
	}
	return run + "-events-" + strconv.Itoa(i)
}

// archivedEvent is one line of an archive: a Concourse event, or in its place a
// set_pipeline step's pipeline.
type archivedEvent struct {
	Step     string                     `json:"step,omitempty"`
	Part     buildevents.Part           `json:"part"`
	N        int                        `json:"n"`
	Last     bool                       `json:"last,omitempty"`
	Event    *event.Envelope            `json:"event,omitempty"`
	Pipeline *buildevents.PipelineToSet `json:"pipeline,omitempty"`
}

// Archived says whether the build has an archive of its events.
func (c *Client) Archived(ctx context.Context, run string) (bool, error) {
	_, err := c.target.Kube.CoreV1().ConfigMaps(c.target.Namespace).Get(ctx, archiveName(run, 0), metav1.GetOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("reading the events archive of build %s: %w", run, err)
	}
}

// Archive keeps the events of a build that has ended (from the start, as Follow emits
// them, its logs read from its pods) as its archive, which Follow then replays, so that
// its pods may go. A build that has an archive already keeps it; one still running is an
// error. It returns the build's final status.
func (c *Client) Archive(ctx context.Context, run string) (event.BuildStatus, error) {
	ns := c.target.Namespace
	pr, err := c.target.Tekton.TektonV1().PipelineRuns(ns).Get(ctx, run, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("archiving build %s: %w", run, err)
	}
	if !buildevents.Done(pr.Status.GetCondition(apis.ConditionSucceeded)) {
		return "", fmt.Errorf("archiving build %s: it has not ended", run)
	}
	if first, err := c.target.Kube.CoreV1().ConfigMaps(ns).Get(ctx, archiveName(run, 0), metav1.GetOptions{}); err == nil {
		return event.BuildStatus(first.Annotations[annotationEventStatus]), nil
	} else if !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("archiving build %s: %w", run, err)
	}
	var events []buildevents.Event
	status, err := c.Follow(ctx, run, buildevents.Cursor{}, func(e buildevents.Event) error {
		events = append(events, e)
		return nil
	}, newCacheIndexer(c))
	if err != nil {
		return "", fmt.Errorf("archiving build %s: %w", run, err)
	}
	parts, err := encodeArchive(events)
	if err != nil {
		return "", fmt.Errorf("archiving build %s: %w", run, err)
	}
	// The first part last: it is what says the archive is whole.
	for i := len(parts) - 1; i >= 0; i-- {
		cm := archivePart(pr, i, parts[i])
		if i == 0 {
			cm.Annotations = map[string]string{annotationEventParts: strconv.Itoa(len(parts)), annotationEventStatus: string(status)}
		}
		if err := c.putConfigMap(ctx, cm); err != nil {
			return "", fmt.Errorf("archiving build %s: %w", run, err)
		}
	}
	return status, nil
}

// putConfigMap creates cm, or replaces what an interrupted archiving left under its name.
func (c *Client) putConfigMap(ctx context.Context, cm *corev1.ConfigMap) error {
	cms := c.target.Kube.CoreV1().ConfigMaps(c.target.Namespace)
	_, err := cms.Create(ctx, cm, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	old, err := cms.Get(ctx, cm.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cm.ResourceVersion = old.ResourceVersion
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// buildKeys are the labels (and annotations) that say which build an object is of.
var buildKeys = []string{runspec.LabelTeam, runspec.LabelPipeline, runspec.LabelJob, runspec.LabelBuild}

// objectLabels are the labels of an object the backend makes for the build pr: the
// build's, ours, and of, whose value is the run's name.
func objectLabels(pr *v1.PipelineRun, of string) map[string]string {
	labels := map[string]string{of: pr.Name, runspec.LabelManagedBy: runspec.ManagedBy}
	for _, k := range buildKeys {
		if v, ok := pr.Labels[k]; ok {
			labels[k] = v
		}
	}
	return labels
}

// archivePart is part i of the archive of run's events, owned by run.
func archivePart(pr *v1.PipelineRun, i int, data []byte) *corev1.ConfigMap {
	labels := objectLabels(pr, LabelEventsOf)
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      archiveName(pr.Name, i),
			Namespace: pr.Namespace,
			Labels:    labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "tekton.dev/v1", Kind: "PipelineRun", Name: pr.Name, UID: pr.UID,
			}},
		},
		BinaryData: map[string][]byte{eventsKey: data},
	}
}

// encodeArchive encodes events as gzipped JSON lines, in parts of at most partLimit
// bytes.
func encodeArchive(events []buildevents.Event) ([][]byte, error) {
	lines := make([][]byte, len(events))
	for i, e := range events {
		a := archivedEvent{Step: e.Key.Step, Part: e.Key.Part, N: e.Key.N, Last: e.Key.Last, Pipeline: e.Pipeline}
		if e.Event != nil {
			env, err := event.NewEnvelope(e.Event, i)
			if err != nil {
				return nil, err
			}
			a.Event = &env
		}
		line, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		lines[i] = line
	}
	return splitParts(lines)
}

// splitParts gzips lines into one part, or halves them until each part fits.
func splitParts(lines [][]byte) ([][]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for _, l := range lines {
		zw.Write(l)
		zw.Write([]byte{'\n'})
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if buf.Len() <= partLimit {
		return [][]byte{buf.Bytes()}, nil
	}
	if len(lines) == 1 {
		return nil, fmt.Errorf("an event of %d bytes is too large to keep", len(lines[0]))
	}
	head, err := splitParts(lines[:len(lines)/2])
	if err != nil {
		return nil, err
	}
	tail, err := splitParts(lines[len(lines)/2:])
	if err != nil {
		return nil, err
	}
	return append(head, tail...), nil
}

// errNoArchive says a build has no (whole) archive.
var errNoArchive = errors.New("no events archive")

// readArchive reads the build's archive: its events and final status, or errNoArchive.
func (c *Client) readArchive(ctx context.Context, run string) ([]buildevents.Event, event.BuildStatus, error) {
	cms := c.target.Kube.CoreV1().ConfigMaps(c.target.Namespace)
	first, err := cms.Get(ctx, archiveName(run, 0), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, "", errNoArchive
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading the events archive of build %s: %w", run, err)
	}
	n, err := strconv.Atoi(first.Annotations[annotationEventParts])
	if err != nil || n < 1 {
		return nil, "", fmt.Errorf("the events archive of build %s (ConfigMap %s) has no valid %s annotation", run, first.Name, annotationEventParts)
	}
	var events []buildevents.Event
	for i := range n {
		cm := first
		if i > 0 {
			if cm, err = cms.Get(ctx, archiveName(run, i), metav1.GetOptions{}); err != nil {
				return nil, "", fmt.Errorf("reading the events archive of build %s: %w", run, err)
			}
		}
		part, err := decodePart(cm.BinaryData[eventsKey])
		if err != nil {
			return nil, "", fmt.Errorf("reading the events archive of build %s (ConfigMap %s): %w", run, cm.Name, err)
		}
		events = append(events, part...)
	}
	return events, event.BuildStatus(first.Annotations[annotationEventStatus]), nil
}

func decodePart(data []byte) ([]buildevents.Event, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	var out []buildevents.Event
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var a archivedEvent
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			return nil, err
		}
		e, err := parseArchived(a)
		if err != nil {
			return nil, err
		}
		e.Key = buildevents.Key{Step: a.Step, Part: a.Part, N: a.N, Last: a.Last}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return out, nil
}

// The event type and version under which archives written before buildevents.Event had
// a Pipeline of its own kept a set_pipeline step's pipeline.
const (
	pipelineEventType    event.EventType    = "concourse-tekton:set-pipeline"
	pipelineEventVersion event.EventVersion = "1.0"
)

// parseArchived reads an archived event: one of Concourse's, or a set_pipeline step's
// pipeline, which is none of them.
func parseArchived(a archivedEvent) (buildevents.Event, error) {
	switch {
	case a.Pipeline != nil:
		return buildevents.Event{Pipeline: a.Pipeline}, nil
	case a.Event == nil:
		return buildevents.Event{}, errors.New("an archived event that is neither an event nor a pipeline")
	case a.Event.Event != pipelineEventType:
		e, err := event.Parse(*a.Event)
		return buildevents.Event{Event: e}, err
	}
	var p buildevents.PipelineToSet
	if a.Event.Data == nil || !pipelineEventVersion.IsCompatibleWith(a.Event.Version) {
		return buildevents.Event{}, fmt.Errorf("an archived %s event of version %s, which this backend does not read", a.Event.Event, a.Event.Version)
	}
	if err := json.Unmarshal(*a.Event.Data, &p); err != nil {
		return buildevents.Event{}, fmt.Errorf("decoding an archived %s event: %w", a.Event.Event, err)
	}
	return buildevents.Event{Pipeline: &p}, nil
}

// replay emits the archived events after does not cover, and returns the build's status.
func replay(events []buildevents.Event, status event.BuildStatus, after *buildevents.Cursor, emit func(buildevents.Event) error) (event.BuildStatus, error) {
	for _, e := range events {
		if after.Covers(e.Key) {
			continue
		}
		if err := emit(e); err != nil {
			return "", err
		}
		if err := after.Advance(e.Key); err != nil {
			return "", err
		}
	}
	return status, nil
}
