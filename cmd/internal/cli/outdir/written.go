package outdir

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// FileName is the name of the file an object is written to: kind-name.yaml, the kind in
// lower case (pipeline-booklit-unit.yaml).
func FileName(kind, name string) string {
	return strings.ToLower(kind) + "-" + name + ".yaml"
}

// Written is a file of a directory that concourse-tekton wrote: named as FileName names
// it, holding that one object, labelled app.kubernetes.io/managed-by: concourse-tekton.
type Written struct {
	File string
	Kind string
	Name string
	// Team, Pipeline and Job are the exact Concourse names of a Pipeline's or a
	// PipelineRun's annotations; empty for a Task, which jobs share.
	Team, Pipeline, Job string
	// TaskRefs are the Tasks a Pipeline refers to.
	TaskRefs []string
}

// candidate is the shape of a name FileName makes: a kind, a DNS-1123 name. Compiled at
// its first use: only convert -o needs it.
var candidate = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z]+-[a-z0-9]([-a-z0-9.]*[a-z0-9])?\.yaml$`) })

// maxWritten bounds the size of a file read to tell whether this tool wrote it: far more
// than any object it writes, which Kubernetes caps at about 1.5 MB.
const maxWritten = 16 << 20

// ReadWritten lists the files of dir that concourse-tekton wrote, sorted by name. A
// directory that does not exist has none.
func ReadWritten(dir string) ([]Written, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Written
	for _, e := range entries {
		if !e.Type().IsRegular() || !candidate().MatchString(e.Name()) {
			continue
		}
		data, err := readAtMost(filepath.Join(dir, e.Name()), maxWritten)
		if err != nil {
			return nil, err
		}
		if w, ok := ParseWritten(e.Name(), data); ok {
			out = append(out, w)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out, nil
}

// readAtMost reads a file, or reports nil when it is larger than limit.
func readAtMost(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil || int64(len(data)) > limit {
		return nil, err
	}
	return data, nil
}

// ParseWritten tells from a file's name and content whether concourse-tekton wrote it. A
// file a user wrote is never taken for one, unless it copies the name, the single
// object and the managed-by label of one.
func ParseWritten(file string, data []byte) (Written, bool) {
	if !candidate().MatchString(file) || len(data) == 0 || moreThanOneDocument(data) {
		return Written{}, false
	}
	var doc struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name        string            `json:"name"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Tasks   []pipelineTask `json:"tasks"`
			Finally []pipelineTask `json:"finally"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Written{}, false
	}
	m := doc.Metadata
	if doc.Kind == "" || m.Name == "" || FileName(doc.Kind, m.Name) != file || m.Labels[runspec.LabelManagedBy] != runspec.ManagedBy {
		return Written{}, false
	}
	w := Written{
		File:     file,
		Kind:     doc.Kind,
		Name:     m.Name,
		Team:     m.Annotations[runspec.LabelTeam],
		Pipeline: m.Annotations[runspec.LabelPipeline],
		Job:      m.Annotations[runspec.LabelJob],
	}
	for _, t := range append(doc.Spec.Tasks, doc.Spec.Finally...) {
		if t.TaskRef != nil && t.TaskRef.Name != "" {
			w.TaskRefs = append(w.TaskRefs, t.TaskRef.Name)
		}
	}
	return w, true
}

type pipelineTask struct {
	TaskRef *struct {
		Name string `json:"name"`
	} `json:"taskRef"`
}

// moreThanOneDocument reports whether YAML holds a document separator after its first
// line: this tool writes one object per file.
func moreThanOneDocument(data []byte) bool {
	for i, line := range bytes.Split(data, []byte("\n")) {
		if i > 0 && (bytes.Equal(bytes.TrimRight(line, " \r"), []byte("---")) || bytes.HasPrefix(line, []byte("--- "))) {
			return true
		}
	}
	return false
}

// Conversion says what a conversion of one or more pipelines of a team writes into a
// directory, for Stale to tell which of the files there it leaves over.
type Conversion struct {
	// Team is the exact Concourse name of the pipelines' team.
	Team string
	// Pipelines are the exact Concourse names of the pipelines converted, each with the
	// jobs it does not convert and whose files it keeps: those `-j` did not select. A
	// job left out because it cannot be converted, or no longer in the pipeline, is not
	// kept.
	Pipelines map[string]map[string]bool
	// Files are the names of the files it writes.
	Files map[string]bool
}

// Stale are the files, among those concourse-tekton wrote (written), that a conversion
// leaves over: a Pipeline or PipelineRun of the team and a pipeline converted that it
// does not write, unless of a job it keeps, and a Task that it does not write and that
// no Pipeline kept refers to. The files of other pipelines stay, with their Tasks.
func (c Conversion) Stale(written []Written) []string {
	var stale []string
	refs := map[string]bool{}
	for _, w := range written {
		if c.Files[w.File] || w.Pipeline == "" {
			continue
		}
		if keep, ok := c.Pipelines[w.Pipeline]; ok && w.Team == c.Team && !keep[w.Job] {
			stale = append(stale, w.File)
			continue
		}
		for _, r := range w.TaskRefs {
			refs[r] = true
		}
	}
	for _, w := range written {
		// A kind without a pipeline other than Task is not one this version writes:
		// what it is for is unknown, so it stays.
		if !c.Files[w.File] && w.Pipeline == "" && w.Kind == "Task" && !refs[w.Name] {
			stale = append(stale, w.File)
		}
	}
	sort.Strings(stale)
	return stale
}
