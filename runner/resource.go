package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runner/cowcopy"
	"github.com/concourse-tekton/concourse-tekton/runner/proc"
	"github.com/concourse-tekton/concourse-tekton/runner/state"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// versionResult is what in and out print on stdout.
type versionResult struct {
	Version  map[string]string     `json:"version"`
	Metadata []state.MetadataField `json:"metadata,omitempty"`
}

// script runs /opt/resource/in or out: the request on stdin, stderr to the log, stdout
// kept as the result and never logged. ok is false for a non-zero exit, whose stdout is
// not looked at. The exit status is the step's (a check's is not: step.check).
func (s *step) script(ctx context.Context, name string, args []string, dir string, request any, env []string) (stdout []byte, ok bool, err error) {
	started := time.Now()
	stdout, status, err := s.runScript(ctx, name, args, dir, request, env)
	if err != nil {
		return nil, false, err
	}
	s.exited(status)
	if status != 0 {
		s.keepRootfs(nil, started, dir, processMark(dir))
	}
	return stdout, status == 0, nil
}

// runScript runs a resource script as script does, and returns its exit status without
// making it the step's.
func (s *step) runScript(ctx context.Context, name string, args []string, dir string, request any, env []string) (stdout []byte, status int, err error) {
	input, err := json.Marshal(request)
	if err != nil {
		return nil, 0, fmt.Errorf("encoding the request for %s: %w", name, err)
	}
	var out bytes.Buffer
	res, err := proc.Run(ctx, proc.Cmd{
		Path:   filepath.Join(s.opts.resourceDir, name),
		Args:   args,
		Dir:    dir,
		Env:    env,
		Stdin:  bytes.NewReader(input),
		Stdout: &out,
		Stderr: s.stderr,
		Grace:  s.opts.grace,
	})
	if err != nil {
		return nil, 0, err
	}
	if res.Interrupted {
		return nil, 0, interruption(ctx)
	}
	return out.Bytes(), res.ExitStatus, nil
}

// parseVersionResult reads in's or out's stdout. Empty output is accepted (and then has
// no version); a null version is Concourse's error, naming the script as it ran.
func parseVersionResult(stdout []byte, path string, args []string) (versionResult, error) {
	var vr versionResult
	if len(bytes.TrimSpace(stdout)) > 0 {
		if err := json.Unmarshal(stdout, &vr); err != nil {
			return versionResult{}, err
		}
	}
	if vr.Version == nil {
		return versionResult{}, fmt.Errorf("resource script (%s %s) output a null version", path, strings.Join(args, " "))
	}
	return vr, nil
}

// resourceEnv is the environment of a resource script: the container's, and the build's
// BUILD_* variables, each only when it is set (Concourse's StepMetadata.Env). A check
// build's scripts see it as Concourse's: named check, of no job.
func resourceEnv(b runspec.Build, hookStatus string, createdBy bool) []string {
	if b.Check {
		b.Name, b.JobID, b.JobName = "check", 0, ""
	}
	env := containerEnv(os.Environ())
	add := func(k, v string) {
		if v != "" && v != "0" {
			env = append(env, k+"="+v)
		}
	}
	num := func(n int64) string { return strconv.FormatInt(n, 10) }
	add("BUILD_ID", num(b.ID))
	add("BUILD_NAME", b.Name)
	add("BUILD_TEAM_ID", num(b.TeamID))
	add("BUILD_TEAM_NAME", b.TeamName)
	add("BUILD_JOB_ID", num(b.JobID))
	add("BUILD_JOB_NAME", b.JobName)
	add("BUILD_PIPELINE_ID", num(b.PipelineID))
	add("BUILD_PIPELINE_NAME", b.PipelineName)
	if len(b.InstanceVars) > 0 {
		if data, err := json.Marshal(b.InstanceVars); err == nil {
			add("BUILD_PIPELINE_INSTANCE_VARS", string(data))
		}
	}
	add("ATC_EXTERNAL_URL", b.ExternalURL)
	if b.ExternalURL != "" {
		add("BUILD_URL", buildURL(b))
		if b.ID != 0 {
			add("BUILD_URL_SHORT", fmt.Sprintf("%s/builds/%d", b.ExternalURL, b.ID))
		}
	}
	if createdBy {
		add("BUILD_CREATED_BY", b.CreatedBy)
	}
	add("BUILD_STATUS", hookStatus)
	return env
}

// buildURL is the build's page: the job's build for job builds, /builds/ID otherwise.
func buildURL(b runspec.Build) string {
	if b.JobName == "" || b.PipelineName == "" {
		return fmt.Sprintf("%s/builds/%d", b.ExternalURL, b.ID)
	}
	u := fmt.Sprintf("%s/teams/%s/pipelines/%s/jobs/%s/builds/%s", b.ExternalURL,
		url.PathEscape(b.TeamName), url.PathEscape(b.PipelineName), url.PathEscape(b.JobName), url.PathEscape(b.Name))
	if len(b.InstanceVars) > 0 {
		keys := make([]string, 0, len(b.InstanceVars))
		for k := range b.InstanceVars {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		q := make([]string, 0, len(keys))
		for _, k := range keys {
			v, err := json.Marshal(b.InstanceVars[k])
			if err != nil {
				continue
			}
			q = append(q, url.QueryEscape("vars."+k)+"="+url.QueryEscape(string(v)))
		}
		u += "?" + strings.Join(q, "&")
	}
	return u
}

// interpolateMap resolves the vars of a source or params map.
func (s *step) interpolateMap(m map[string]any) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	out, err := s.interpolate(m)
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}

// resultBudget is how many bytes of version, versions and metadata results a step may
// write, counted as they stand in the pod's termination message (JSON strings, their
// quotes escaped: resultSize): Tekton passes results there, 4 KiB for all of them with
// its own entries, and a step whose results do not fit fails. The state directory keeps
// everything.
const resultBudget = 3072

// resultRoom is resultBudget less what the step's shared resource caches take of the
// termination message (their result, reportShared, with its entry's key and type), so
// that all of them fit as before.
func (s *step) resultRoom() int {
	if len(s.shared) == 0 {
		return resultBudget
	}
	raw, _ := json.Marshal(s.shared) // records always encode
	const entry = len(`{"key":"resource-cache","value":,"type":1},`)
	return resultBudget - resultSize(raw) - entry
}

// resultSize is how many bytes a result's value takes in the termination message, where
// Tekton writes it as a JSON string.
func resultSize(value []byte) int {
	encoded, _ := json.Marshal(string(value)) // a string always encodes
	return len(encoded)
}

// publish writes a version result to the state directory and as Tekton results, the
// latter cut to fit resultBudget: the version whole or not at all, then as many metadata
// fields as fit.
func (s *step) publish(r state.Result) error {
	if err := s.state.WriteResult(s.spec.PlanID, r); err != nil {
		return err
	}
	version, metadata, err := resultsWithin(r, s.resultRoom())
	if err != nil {
		return err
	}
	return errors.Join(s.writeResult(runspec.ResultVersion, version), s.writeResult(runspec.ResultMetadata, metadata))
}

func resultsWithin(r state.Result, budget int) (version, metadata []byte, err error) {
	version, err = json.Marshal(r.Version)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the version: %w", err)
	}
	if resultSize(version) > budget {
		version = []byte("{}")
	}
	fields := r.Metadata
	for n := len(fields); ; n-- {
		kept := fields[:n]
		if kept == nil {
			kept = []state.MetadataField{}
		}
		if metadata, err = json.Marshal(kept); err != nil {
			return nil, nil, fmt.Errorf("encoding the metadata: %w", err)
		}
		if resultSize(version)+resultSize(metadata) <= budget || n == 0 {
			return version, metadata, nil
		}
	}
}

// publishCheck writes what a check found: the last version to the state directory (for a
// get's version_from) and as the version result, and the versions, oldest first, as the
// versions result, both within resultBudget (checkResultsWithin). When the older ones do
// not fit, the step's log says so.
func (s *step) publishCheck(versions []map[string]string) error {
	var latest map[string]string
	if len(versions) > 0 {
		latest = versions[len(versions)-1]
	}
	if err := s.state.WriteResult(s.spec.PlanID, state.Result{Version: latest}); err != nil {
		return err
	}
	room := s.resultRoom()
	version, list, kept, err := checkResultsWithin(versions, room)
	if err != nil {
		return err
	}
	if err := errors.Join(s.writeResult(runspec.ResultVersion, version), s.writeResult(runspec.ResultVersions, list)); err != nil {
		return err
	}
	if kept == len(versions) && !(s.opts.framedVersions && len(versions) > 0) {
		return nil
	}
	// More than the results carry (room bytes, in Tekton's 4 KiB termination message), or
	// a check session's: all of them in the log's last line, which the backend reads.
	frame, err := runspec.CheckedVersions(versions).Frame()
	if err != nil {
		return err
	}
	if _, err := s.stdout.Write(frame); err != nil {
		return fmt.Errorf("writing the check's versions: %w", err)
	}
	return s.stdout.Flush()
}

// checkResultsWithin encodes a check's versions, oldest first, as its version result (the
// last, JSON; null when there is none) and its versions result (a JSON list), which take
// at most budget bytes together (resultSize): the list keeps the newest versions that fit
// and says how many (kept). The last version always fits, or it is an error: a version
// the results cannot carry would be lost.
func checkResultsWithin(versions []map[string]string, budget int) (version, list []byte, kept int, err error) {
	if len(versions) == 0 {
		return []byte("null"), []byte("[]"), 0, nil
	}
	encoded := make([][]byte, len(versions))
	// A value's size in the termination message is the sum of its parts' (escaping is
	// per character), each part's without the quotes of its own string.
	inner := func(b []byte) int { return resultSize(b) - 2 }
	size := 0 // of the list: its quotes, brackets, commas and the versions kept
	first := len(versions)
	for i := len(versions) - 1; i >= 0; i-- {
		if encoded[i], err = json.Marshal(versions[i]); err != nil {
			return nil, nil, 0, fmt.Errorf("encoding version %d: %w", i+1, err)
		}
		grown := size + inner(encoded[i])
		if i == len(versions)-1 {
			version = encoded[i]
			grown += len(`"[]"`) + resultSize(version)
		} else {
			grown++ // the comma
		}
		if grown > budget {
			break
		}
		size, first = grown, i
	}
	if first == len(versions) {
		return nil, nil, 0, fmt.Errorf("the check's latest version takes %d bytes in the step's results, twice (as its version and in its versions): more than the %d bytes they can carry (Tekton passes them in the pod's 4 KiB termination message)", resultSize(version), budget)
	}
	list = append([]byte("["), bytes.Join(encoded[first:], []byte(","))...)
	list = append(list, ']')
	return version, list, len(versions) - first, nil
}

func runCheck(ctx context.Context, s *step) (bool, error) {
	c := s.spec.Check
	source, err := s.interpolateMap(c.Source)
	if err != nil {
		return false, err
	}
	stdout, status, err := s.check(ctx, source, c.FromVersion)
	if err != nil || status != 0 {
		return false, err
	}
	var versions []map[string]string
	if err := json.Unmarshal(stdout, &versions); err != nil {
		return false, err
	}
	return true, s.publishCheck(versions)
}

// check runs the resource's check script from the version from (nil: none, for the
// latest) with the build's environment, and returns its stdout and exit status, which it
// does not make the step's.
func (s *step) check(ctx context.Context, source map[string]any, from map[string]string) ([]byte, int, error) {
	request := struct {
		Source  map[string]any    `json:"source"`
		Version map[string]string `json:"version,omitempty"`
	}{Source: nonNil(source), Version: from}
	return s.runScript(ctx, "check", nil, "", request, resourceEnv(s.spec.Build, s.spec.HookStatus, false))
}

// latest runs the resource's check for a get given no version (Get.Latest), and returns
// the last version it printed. A check that fails fails the get, with the check's exit
// status; one that finds no version is an error.
func (s *step) latest(ctx context.Context, source map[string]any) (map[string]string, bool, error) {
	stdout, status, err := s.check(ctx, source, nil)
	if err != nil {
		return nil, false, err
	}
	if status != 0 {
		s.exited(status)
		return nil, false, nil
	}
	var versions []map[string]string
	if err := json.Unmarshal(stdout, &versions); err != nil {
		return nil, false, fmt.Errorf("reading the versions the check of %s printed: %w", s.spec.Name, err)
	}
	if len(versions) == 0 {
		return nil, false, fmt.Errorf("no version to fetch: the check of %s found none", s.spec.Name)
	}
	return versions[len(versions)-1], true, nil
}

func runGet(ctx context.Context, s *step) (bool, error) {
	defer resourceProcessMark(s, "get")()
	g := s.spec.Get
	source, err := s.interpolateMap(g.Source)
	if err != nil {
		return false, err
	}
	params, err := s.interpolateMap(g.Params)
	if err != nil {
		return false, err
	}
	version := g.Version
	switch {
	case g.VersionFrom != "":
		r, found, err := s.state.ReadResult(g.VersionFrom)
		if err != nil {
			return false, err
		}
		if !found || r.Version == nil {
			return false, fmt.Errorf("no version to fetch: step %s produced none", g.VersionFrom)
		}
		version = r.Version
	case g.Latest:
		var ok bool
		if version, ok, err = s.latest(ctx, source); err != nil || !ok {
			return false, err
		}
	}
	cache, cacheable := s.resourceCache(g.Type, source, params, version)
	if cacheable {
		r, found := cache.lookup()
		if !found {
			// Fetched by another job of the team.
			r, found = s.findShared(ctx, cache)
		}
		if found {
			fmt.Fprint(s.stderr, foundCache)
			return true, s.fetched(g, source, cache.data(), r, &cache)
		}
	}
	dir := filepath.Join(s.opts.tmpBuild, "get")
	if err := emptyDir(dir); err != nil {
		return false, err
	}
	writeProcessMark(processMark(dir))
	request := struct {
		Source  map[string]any    `json:"source"`
		Params  map[string]any    `json:"params,omitempty"`
		Version map[string]string `json:"version"`
	}{Source: nonNil(source), Params: params, Version: version}
	path, args := filepath.Join(s.opts.resourceDir, "in"), []string{dir}
	stdout, ok, err := s.script(ctx, "in", args, dir, request, resourceEnv(s.spec.Build, s.spec.HookStatus, false))
	if err != nil || !ok {
		return false, err
	}
	vr, err := parseVersionResult(stdout, concourseScript(s, path, "in"), concourseArgs(s, args, "get"))
	if err != nil {
		return false, err
	}
	r := state.Result{Version: vr.Version, Metadata: vr.Metadata}
	if cacheable {
		// The fetched files go to the cache, the artifact being the cache's: no more
		// copies than without it.
		err := cache.save(dir, r, s.spec.PlanID)
		if err == nil {
			s.share(ctx, cache)
			return true, s.fetched(g, source, cache.data(), r, &cache)
		}
		s.logf("the resource cache of %s was not saved: %v", s.spec.Name, err)
	}
	volPath, err := s.keep(dir, s.spec.Name)
	if err != nil {
		return false, err
	}
	return true, s.fetched(g, source, volPath, r, nil)
}

// fetched makes what a get fetched, at volPath on the volume (in cache, if not nil), the
// step's artifact, its metadata the step's local var, and r its result.
func (s *step) fetched(g *runspec.Get, source map[string]any, volPath string, r state.Result, cache *resourceCache) error {
	if cache != nil {
		if err := cache.use(s.spec.Build.Name); err != nil {
			// The job's next build fetches it again.
			s.logf("the resource cache of %s is not kept: %v", s.spec.Name, err)
		}
	}
	if err := s.state.RegisterArtifact(s.spec.Scope, s.spec.Name, volPath); err != nil {
		return err
	}
	metadata := map[string]any{}
	for _, f := range r.Metadata {
		metadata[f.Name] = f.Value
	}
	if err := s.state.SetVar(s.spec.Scope, s.spec.Name, state.Var{Value: metadata}); err != nil {
		return err
	}
	if ref := imageRef(g.Type, source, r.Version); ref != "" {
		// A task's `image:` naming this artifact runs this image, pulled from its registry.
		if err := s.writeResult(runspec.ResultImage, []byte(ref)); err != nil {
			return err
		}
	}
	return s.publish(r)
}

// imageRef is the registry reference of an image fetched by a registry-image or
// docker-image get: its repository at the fetched digest.
func imageRef(typ string, source map[string]any, version map[string]string) string {
	if !runspec.RegistryImageType(typ) {
		return ""
	}
	repo, _ := source["repository"].(string)
	digest := version["digest"]
	if repo == "" || digest == "" {
		return ""
	}
	return repo + "@" + digest
}

func runPut(ctx context.Context, s *step) (bool, error) {
	defer resourceProcessMark(s, "put")()
	p := s.spec.Put
	source, err := s.interpolateMap(p.Source)
	if err != nil {
		return false, err
	}
	params, err := s.interpolateMap(p.Params)
	if err != nil {
		return false, err
	}
	dir := filepath.Join(s.opts.tmpBuild, "put")
	if err := emptyDir(dir); err != nil {
		return false, err
	}
	inputs, err := s.putInputs()
	if err != nil {
		return false, err
	}
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		if _, err := cowcopy.Tree(filepath.Join(s.paths.Volume, inputs[name]), filepath.Join(dir, name), cowcopy.Options{}); err != nil {
			return false, fmt.Errorf("mounting input %s: %w", name, err)
		}
	}
	writeProcessMark(processMark(dir))
	request := struct {
		Source map[string]any `json:"source"`
		Params map[string]any `json:"params,omitempty"`
	}{Source: nonNil(source), Params: params}
	path, args := filepath.Join(s.opts.resourceDir, "out"), []string{dir}
	stdout, ok, err := s.script(ctx, "out", args, dir, request, resourceEnv(s.spec.Build, s.spec.HookStatus, p.ExposeBuildCreatedBy))
	if err != nil || !ok {
		return false, err
	}
	vr, err := parseVersionResult(stdout, concourseScript(s, path, "out"), concourseArgs(s, args, "put"))
	if err != nil {
		return false, err
	}
	return true, s.publish(state.Result{Version: vr.Version, Metadata: vr.Metadata})
}

// putInputs are the artifacts a put mounts, name to volume path (runspec's doc, §2.6).
func (s *step) putInputs() (map[string]string, error) {
	p := s.spec.Put
	visible, err := s.state.Artifacts(s.spec.Scope)
	if err != nil {
		return nil, err
	}
	switch p.Inputs {
	case runspec.InputsAll:
		return visible, nil
	case runspec.InputsList:
		out := map[string]string{}
		var missing []string
		for _, name := range p.InputNames {
			name = strings.TrimSpace(name)
			if v, ok := visible[name]; ok {
				out[name] = v
			} else {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("missing inputs: %s", strings.Join(missing, ", "))
		}
		return out, nil
	}
	out := map[string]string{}
	for _, name := range concourse.DetectPutInputs(p.Params) {
		if v, ok := visible[name]; ok {
			out[name] = v
		}
	}
	return out, nil
}

// resourceProcessMark clears the process mark of a get's or put's directory (sub, under
// /tmp/build), and returns what writes it once the step ended: an intercept session of
// the running step waits for it (awaitProcess). The step writes it too once the
// directory is ready for its script, a put's inputs in it.
func resourceProcessMark(s *step, sub string) func() {
	mark := processMark(filepath.Join(s.opts.tmpBuild, sub))
	_ = os.Remove(mark)
	return func() { writeProcessMark(mark) }
}

// concourseScript and concourseArgs name a script as Concourse would in its messages,
// whatever directories tests moved it to.
func concourseScript(s *step, path, name string) string {
	if s.opts.resourceDir == defaultResourceDir {
		return path
	}
	return defaultResourceDir + "/" + name
}

func concourseArgs(s *step, args []string, sub string) []string {
	if s.opts.tmpBuild == defaultTmpBuild {
		return args
	}
	return []string{defaultTmpBuild + "/" + sub}
}

// keep makes dir, under /tmp/build, an artifact: where it is when /tmp/build is the build
// volume's Paths.Work, otherwise copied to the volume. It returns the volume path.
func (s *step) keep(dir, name string) (string, error) {
	if s.paths.Work != "" {
		if rel, err := filepath.Rel(s.opts.tmpBuild, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.ToSlash(filepath.Join(s.paths.Work, rel)), nil
		}
	}
	volPath := runspec.ArtifactPath(s.spec.PlanID, name)
	dst := filepath.Join(s.paths.Volume, volPath)
	if err := state.MkdirShared(filepath.Dir(dst)); err != nil {
		return "", fmt.Errorf("saving artifact %s: %w", name, err)
	}
	if err := os.RemoveAll(dst); err != nil {
		return "", fmt.Errorf("saving artifact %s: %w", name, err)
	}
	if _, err := cowcopy.Tree(dir, dst, cowcopy.Options{}); err != nil {
		return "", fmt.Errorf("saving artifact %s: %w", name, err)
	}
	return volPath, nil
}

// emptyDir makes dir exist and be empty.
func emptyDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("preparing %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("preparing %s: %w", dir, err)
	}
	return nil
}

func nonNil(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
