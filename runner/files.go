package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/runner/state"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// readArtifactFile reads `artifact/path/in/it` from the artifact registry.
func (s *step) readArtifactFile(file string) ([]byte, error) {
	artifact, rest, ok := strings.Cut(file, "/")
	if !ok {
		return nil, fmt.Errorf("config path '%s' does not specify where the file lives", file)
	}
	volPath, found, err := s.state.Artifact(s.spec.Scope, artifact)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("unknown artifact source: '%s' in file path '%s'", artifact, file)
	}
	// The path stays inside the artifact, whatever ".." it holds.
	p := filepath.Join(s.paths.Volume, volPath, filepath.FromSlash(path.Clean("/"+rest)))
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	return data, nil
}

// interpolateString resolves the vars of one plan string strictly.
func (s *step) interpolateString(v string) (string, error) {
	out, err := s.interpolate(v)
	if err != nil {
		return "", err
	}
	str, ok := out.(string)
	if !ok {
		return "", fmt.Errorf("%q is not a string once interpolated", v)
	}
	return str, nil
}

// Formats of load_var.
const (
	formatJSON = "json"
	formatYAML = "yaml"
	formatYML  = "yml"
	formatTrim = "trim"
	formatRaw  = "raw"
)

// parseVar reads a load_var file in its format (the default comes from the extension).
func parseVar(file, format string, data []byte) (any, error) {
	if format == "" {
		switch filepath.Ext(file) {
		case ".json":
			format = formatJSON
		case ".yml", ".yaml":
			format = formatYAML
		default:
			format = formatTrim
		}
	}
	switch format {
	case formatJSON:
		var v any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		err := dec.Decode(&v)
		if err == nil {
			if _, trailing := dec.Token(); !errors.Is(trailing, io.EOF) {
				err = errors.New("trailing data after the JSON value")
			}
		}
		if err != nil {
			return nil, fmt.Errorf("failed to parse %s in format %s: %w", file, format, err)
		}
		return v, nil
	case formatYAML, formatYML:
		v, err := concourse.ParseYAMLValue(string(data))
		if err != nil {
			return nil, fmt.Errorf("failed to parse %s in format %s: %w", file, format, err)
		}
		return v, nil
	case formatTrim:
		return strings.TrimSpace(string(data)), nil
	case formatRaw:
		return string(data), nil
	}
	return nil, fmt.Errorf("invalid format %s: use json, yaml, yml, trim or raw", format)
}

func runLoadVar(_ context.Context, s *step) (bool, error) {
	lv := s.spec.LoadVar
	file, err := s.interpolateString(lv.File)
	if err != nil {
		return false, err
	}
	format, err := s.interpolateString(lv.Format)
	if err != nil {
		return false, err
	}
	data, err := s.readArtifactFile(file)
	if err != nil {
		return false, err
	}
	value, err := parseVar(file, format, data)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(s.stdout, "var %s fetched.\n", s.spec.Name)
	if !lv.Reveal {
		s.secrets.Add(value)
	}
	if err := s.state.SetVar(s.spec.Scope, s.spec.Name, state.Var{Value: value, Redact: !lv.Reveal}); err != nil {
		return false, err
	}
	fmt.Fprintf(s.stdout, "added var %s to build.\n", s.spec.Name)
	return true, nil
}

// runSetPipeline reads and validates the child pipeline as Concourse's set_pipeline step
// does, and hands it to the backend in one frame on stdout (runspec.PipelineToSet): no
// ATC runs in the pod to set it. Its validation errors fail the step; its warnings travel
// in the frame, so that the frame is the whole output of a step that succeeded.
func runSetPipeline(_ context.Context, s *step) (bool, error) {
	sp := s.spec.SetPipeline
	plan, err := s.interpolate(map[string]any{
		"file": sp.File, "team": sp.Team, "vars": orEmpty(sp.Vars), "var_files": toAny(sp.VarFiles), "instance_vars": orEmpty(sp.InstanceVars),
	})
	if err != nil {
		return false, err
	}
	p := plan.(map[string]any)
	file, _ := p["file"].(string)
	team, _ := p["team"].(string)
	instanceVars, _ := p["instance_vars"].(map[string]any)
	stepVars, _ := p["vars"].(map[string]any)
	name := s.spec.Name
	if name == "self" {
		name, team, instanceVars = s.spec.Build.PipelineName, "", s.spec.Build.InstanceVars
	}
	// Concourse v8's messages, before anything else is looked at.
	if strings.Contains(name, "/") {
		s.logf("ERROR: pipeline name cannot contain '/'")
		return false, nil
	}
	if strings.Contains(team, "/") {
		s.logf("ERROR: team name cannot contain '/'")
		return false, nil
	}
	if file == "" {
		return false, errors.New("file is not specified")
	}
	data, err := s.readArtifactFile(file)
	if err != nil {
		return false, err
	}
	// Concourse v8 reads the file with yaml.v3 first, which refuses a duplicate key, and
	// only then interpolates it (exec.setPipelineSource.MarshalPipelineConfig).
	if err := yamlv3.Unmarshal(data, make(map[any]any)); err != nil {
		s.logf("error parsing pipeline:")
		fmt.Fprintf(s.stderr, "%s", err)
		return false, nil
	}
	// Concourse v8's precedence: the instance vars, then the step's vars, then each var
	// file (the first that has the var wins).
	static := vars.Multi{vars.StaticVariables(orEmpty(instanceVars)), vars.StaticVariables(orEmpty(stepVars))}
	files, _ := p["var_files"].([]any)
	for _, f := range files {
		f, _ := f.(string)
		content, err := s.readArtifactFile(f)
		if err != nil {
			return false, err
		}
		fileVars, err := concourse.ParseVarsFile(f, content)
		if err != nil {
			s.logf("%v", err)
			return false, nil
		}
		static = append(static, fileVars)
	}
	pipeline, diags := concourse.ParsePipeline(file, data, static)
	if errs := diags.Errors(); len(errs) > 0 || pipeline == nil {
		for _, d := range diags.Warnings() {
			s.logf("WARNING: %v", d)
		}
		for _, d := range errs {
			s.logf("%v", d)
		}
		return false, nil
	}
	config, err := json.Marshal(pipeline.Document())
	if err != nil {
		return false, fmt.Errorf("encoding the pipeline: %w", err)
	}
	out := runspec.PipelineToSet{Team: team, Pipeline: name, InstanceVars: instanceVars, Config: config}
	for _, d := range diags.Warnings() {
		out.Warnings = append(out.Warnings, "WARNING: "+d.Error())
	}
	frame, err := out.Frame()
	if err != nil {
		return false, err
	}
	// Not through the redacting writer: a credential's value could match inside the
	// base64, and the frame is never shown.
	if err := s.stdout.Flush(); err != nil {
		return false, err
	}
	if _, err := s.stdout.W.Write(frame); err != nil {
		return false, fmt.Errorf("handing the pipeline over: %w", err)
	}
	return true, nil
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func toAny(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

// maxConfigResult keeps the config result well inside Tekton's 4 KiB of results per step;
// the task reads the config from the state directory anyway.
const maxConfigResult = 2048

// maxVarsResult bounds the vars result (names only), which the config result gives way to.
const maxVarsResult = 1536

func runResolve(_ context.Context, s *step) (bool, error) {
	r := s.spec.Resolve
	raw := r.Config
	if raw == nil {
		var err error
		if raw, err = s.readTaskFile(r.File, r.Vars); err != nil {
			return false, err
		}
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return false, fmt.Errorf("invalid task config %s: a task config must be a map with platform, run and so on", r.File)
	}
	cfg, err := s.taskConfig(m, nil)
	// With supplied credentials, the vars of the file the build's starter did not know of
	// are listed for it (result vars): it supplies their values in the task's vars Secret,
	// which the task's pod waits for. The task's image cannot wait: it must not need them.
	var needed []string
	if refs, ok := startersVars(err); ok && s.spec.SuppliedCredentials {
		lenient, lerr := s.lenientTaskConfig(m)
		if lerr != nil || imageRefNeedsVars(lenient, r) {
			return false, err
		}
		cfg, err, needed = lenient, nil, refs
	}
	if err != nil {
		return false, err
	}
	image := ""
	if !r.ImageArtifact {
		// A task running an artifact (image:) takes no image from its config, as in
		// Concourse, which then ignores its image_resource and rootfs_uri.
		if image, err = imageReference(cfg, r); err != nil {
			return false, err
		}
	}
	configLimit := maxConfigResult
	if s.spec.SuppliedCredentials {
		list, err := json.Marshal(append([]string{}, needed...))
		if err != nil {
			return false, fmt.Errorf("encoding the task's vars: %w", err)
		}
		if len(list) > maxVarsResult {
			return false, fmt.Errorf("task config %s needs too many vars to list (%d bytes of names)", r.File, len(list))
		}
		if err := s.writeResult(runspec.ResultVars, list); err != nil {
			return false, err
		}
		configLimit -= len(list)
		var pull []byte
		if p := s.filePull(m, cfg, r.ImageArtifact); p != nil {
			if pull, err = json.Marshal(p); err != nil {
				return false, fmt.Errorf("encoding the image's credentials: %w", err)
			}
		}
		if err := s.writeResult(runspec.ResultPull, pull); err != nil {
			return false, err
		}
		configLimit -= len(pull)
	}
	// Published before the build vars: no credential ever reaches the TaskRun's status.
	encoded, err := json.Marshal(m)
	if err != nil {
		return false, fmt.Errorf("encoding the task config: %w", err)
	}
	if err := s.state.WriteConfig(r.TaskPlanID, encoded); err != nil {
		return false, err
	}
	if err := s.writeResult(runspec.ResultImage, []byte(image)); err != nil {
		return false, err
	}
	// What the task's events show: as Concourse 8 shows it, the run's path and args
	// interpolated, the credentials in them redacted (unless the build reveals them).
	shown, err := json.Marshal(s.shownConfig(m, cfg, len(needed) == 0))
	if err != nil {
		return false, fmt.Errorf("encoding the task config: %w", err)
	}
	if len(shown) <= configLimit {
		if err := s.writeResult(runspec.ResultConfig, shown); err != nil {
			return false, err
		}
	}
	return true, nil
}

// shownConfig is the raw task config m with the run's path and args of its interpolated
// config cfg, redacted as the step's output is: what Concourse 8's initialize-task and
// start-task events show. While the build's starter has yet to supply some of its vars
// (interpolated false), the run shows as the file has it.
func (s *step) shownConfig(m map[string]any, cfg concourse.TaskConfig, interpolated bool) map[string]any {
	run, ok := m["run"].(map[string]any)
	if !ok || !interpolated {
		return m
	}
	redact := s.stdout.Secrets.String
	shownRun := maps.Clone(run)
	shownRun["path"] = redact(cfg.Run.Path)
	if cfg.Run.Args != nil {
		args := make([]any, len(cfg.Run.Args))
		for i, a := range cfg.Run.Args {
			args[i] = redact(a)
		}
		shownRun["args"] = args
	}
	shown := maps.Clone(m)
	shown["run"] = shownRun
	return shown
}

// imageRefNeedsVars tells whether the image a task's pod runs is not known yet: its
// image_resource's type, or the reference imageReference makes of it (its repository,
// tag, digest) or of its rootfs_uri, still holds a ((var)). Its source's credentials may:
// the build's starter looks them up for the node's pull (filePull).
func imageRefNeedsVars(cfg concourse.TaskConfig, r *runspec.Resolve) bool {
	if ir := cfg.ImageResource; ir != nil && strings.Contains(ir.Type, "((") {
		return true
	}
	ref, err := imageReference(cfg, r)
	return err == nil && strings.Contains(ref, "((")
}

// filePull is, with supplied credentials, the credentials of the registry of a task
// file's image (runspec.ResultPull): its registry-image source's username and password
// as the file (raw) writes them, the repository as cfg resolved it. A password written
// out is not carried (it would be in the TaskRun's status): the image is then pulled
// without it, as the step's log says. None for a task that runs an artifact (its get's
// credentials are the build's already) or whose image gives no password.
func (s *step) filePull(raw map[string]any, cfg concourse.TaskConfig, artifact bool) *runspec.Pull {
	ir := cfg.ImageResource
	if artifact || ir == nil || !runspec.RegistryImageType(ir.Type) {
		return nil
	}
	rawImage, _ := raw["image_resource"].(map[string]any)
	source, _ := rawImage["source"].(map[string]any)
	user, _ := source["username"].(string)
	pass, _ := source["password"].(string)
	if pass == "" {
		return nil
	}
	if !strings.Contains(pass, "((") {
		s.logf("WARNING: the task's image is pulled without the credentials its image_resource gives: its password is written in the task file, and only a ((var)) of it can reach the node that pulls the image")
		return nil
	}
	repo, _ := ir.Source["repository"].(string)
	return &runspec.Pull{Repository: repo, Username: user, Password: pass}
}

// imageReference is the image a task's pod runs: a registry-image or docker-image
// image_resource as repository:tag or repository@digest, a mock image_resource with
// mirror_self as r's MockImage (when given), a docker:/// rootfs_uri, or else r's
// DefaultImage, as Concourse runs such a task in its worker's default root file system.
func imageReference(cfg concourse.TaskConfig, r *runspec.Resolve) (string, error) {
	if ir := cfg.ImageResource; ir != nil {
		if mirrorsMock(ir) && r.MockImage != "" {
			return r.MockImage, nil
		}
		if !runspec.RegistryImageType(ir.Type) {
			return "", fmt.Errorf("image_resource of type %s is not supported: use registry-image or docker-image", ir.Type)
		}
		repo, _ := ir.Source["repository"].(string)
		if repo == "" {
			return "", errors.New("image_resource has no source.repository")
		}
		if d := ir.Version["digest"]; d != "" {
			return repo + "@" + d, nil
		}
		tag := "latest"
		if t, ok := ir.Source["tag"]; ok {
			tag = fmt.Sprint(t)
		}
		return repo + ":" + tag, nil
	}
	if uri := cfg.RootfsURI; uri != "" {
		ref, ok := strings.CutPrefix(uri, "docker:///")
		if !ok || ref == "" {
			return "", fmt.Errorf("rootfs_uri %s is not supported: use docker:///image", uri)
		}
		if name, tag, ok := strings.Cut(ref, "#"); ok {
			ref = name + ":" + tag
		}
		return ref, nil
	}
	if r.DefaultImage != "" {
		return r.DefaultImage, nil
	}
	return "", errors.New("the task config has no image_resource and no rootfs_uri, and the build no default task image: give the config one, or the build a default (--default-task-image; the web node's --tekton-default-task-image)")
}

// computeOutcome is the join and verdict modes: the final outcome of a tree.
func (s *step) computeOutcome(tree runspec.Node) runspec.Outcome {
	o, _, err := s.evaluate(tree, true)
	if err != nil {
		s.logf("%v", err)
		return runspec.Errored
	}
	return o
}

// decodeUseNumber decodes JSON keeping numbers exact.
func decodeUseNumber(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}
