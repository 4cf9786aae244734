package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/runner/cowcopy"
	"github.com/concourse-tekton/concourse-tekton/runner/proc"
	"github.com/concourse-tekton/concourse-tekton/runner/state"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// Default PATHs Concourse gives a task whose environment has none.
const (
	rootPath    = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	nonRootPath = "/usr/local/bin:/usr/bin:/bin"
)

// MissingInputsError is Concourse's error for required inputs with no artifact.
type MissingInputsError struct {
	Inputs []string
}

func (e MissingInputsError) Error() string {
	return "missing inputs: " + strings.Join(e.Inputs, ", ")
}

// workDir is a task's working directory: /tmp/build/ and the first 4 bytes of the
// SHA-256 of the step name, in hex.
func workDir(tmpBuild, stepName string) string {
	sum := sha256.Sum256([]byte(stepName))
	return filepath.Join(tmpBuild, hex.EncodeToString(sum[:4]))
}

// processMark is the file a task's, get's or put's runner writes, beside its working
// directory wd, once the step's process started (a resource's script, once its
// directory is ready for it) or the step ended without one: an intercept session of the
// running step waits for it, so that it starts where the process does, with its inputs
// staged (awaitProcess). It is the container's, as the working directory is.
func processMark(wd string) string {
	return filepath.Join(filepath.Dir(wd), "."+filepath.Base(wd)+".started")
}

// writeProcessMark writes the process mark. A mark that cannot be written leaves a
// session waiting until it gives up, and the step as it is.
func writeProcessMark(mark string) {
	if err := os.MkdirAll(filepath.Dir(mark), 0o755); err == nil {
		_ = os.WriteFile(mark, nil, 0o644)
	}
}

// resolvePath places a config path (input, output, cache, run.dir) in the working
// directory: absolute paths stay, and in relative ones every ".." is deleted, not resolved.
func resolvePath(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, strings.ReplaceAll(p, "..", ""))
}

// rawTaskConfig is a task's config before the build vars: the embedded config, or the
// file's with the step's vars applied leniently (recorded by the resolve step, or read
// here when there is no record).
func (s *step) rawTaskConfig(planID string, t *runspec.Task) (map[string]any, error) {
	var raw any
	switch {
	case t.Config != nil:
		raw = t.Config
	case t.File != "":
		data, found, err := s.state.ReadConfig(planID)
		if err != nil {
			return nil, err
		}
		if found {
			if err := decodeUseNumber(data, &raw); err != nil {
				return nil, fmt.Errorf("reading the resolved config of %s: %w", planID, err)
			}
			break
		}
		if raw, err = s.readTaskFile(t.File, t.Vars); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("the task has neither a config nor a file")
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, errors.New("a task config must be a map with platform, run and so on")
	}
	return m, nil
}

// readTaskFile reads a `file:` task config and applies the step's vars leniently.
func (s *step) readTaskFile(file string, stepVars map[string]any) (any, error) {
	data, err := s.readArtifactFile(file)
	if err != nil {
		return nil, err
	}
	raw, err := concourse.ParseYAMLValue(string(data))
	if err != nil {
		return nil, fmt.Errorf("reading task config %s: %w", file, err)
	}
	if raw, err = vars.Interpolate(raw, vars.StaticVariables(stepVars), false); err != nil {
		return nil, fmt.Errorf("interpolating task config %s: %w", file, err)
	}
	return raw, nil
}

// taskConfig assembles a task's config as Concourse does: the raw config, the step's
// params over the config's (with a warning for each one the config lacks), then the build
// vars, strictly, then Concourse's validation.
func (s *step) taskConfig(raw map[string]any, stepParams map[string]any) (concourse.TaskConfig, error) {
	merged := make(map[string]any, len(raw))
	for k, v := range raw {
		merged[k] = v
	}
	if len(stepParams) > 0 {
		params := map[string]any{}
		if existing, ok := raw["params"].(map[string]any); ok {
			for k, v := range existing {
				params[k] = v
			}
		}
		// On stdout, where the task's own output follows: two streams of a container
		// reach its log in no certain order, and Concourse's warning comes first.
		warned := false
		for _, k := range slices.Sorted(maps.Keys(stepParams)) {
			if _, ok := params[k]; !ok {
				fmt.Fprintf(s.stdout, "[WARNING] %s was defined in pipeline but missing from task file\n", k)
				warned = true
			}
			params[k] = stepParams[k]
		}
		if warned {
			_ = s.stdout.Flush()
		}
		merged["params"] = params
	}
	return s.interpolatedConfig(merged, true)
}

// lenientTaskConfig is taskConfig with the vars that are not found left as they are: what
// a resolve step can tell of a task whose vars its starter has yet to supply.
func (s *step) lenientTaskConfig(raw map[string]any) (concourse.TaskConfig, error) {
	return s.interpolatedConfig(raw, false)
}

// interpolatedConfig resolves the build vars in a raw task config (strictly or not) and
// validates it as Concourse does.
func (s *step) interpolatedConfig(raw map[string]any, strict bool) (concourse.TaskConfig, error) {
	interpolated, err := vars.Interpolate(raw, s.vars, strict)
	if err != nil {
		return concourse.TaskConfig{}, err
	}
	data, err := json.Marshal(interpolated)
	if err != nil {
		return concourse.TaskConfig{}, fmt.Errorf("encoding the task config: %w", err)
	}
	cfg, err := concourse.ParseTaskConfig(data)
	if err != nil {
		return concourse.TaskConfig{}, fmt.Errorf("invalid task config: %w", err)
	}
	return cfg, nil
}

func runTask(ctx context.Context, s *step) (bool, error) {
	t := s.spec.Task
	wd := workDir(s.opts.tmpBuild, s.spec.Name)
	// An intercept session of the running step starts once its process has, or the
	// step has ended without one (awaitProcess).
	mark := processMark(wd)
	_ = os.Remove(mark)
	defer writeProcessMark(mark)
	raw, err := s.rawTaskConfig(s.spec.PlanID, t)
	if err != nil {
		return false, err
	}
	cfg, err := s.taskConfig(raw, t.Params)
	if err != nil {
		return false, err
	}
	if cfg.Run.Path == "" {
		return false, errors.New("the task config has no run.path (image entrypoints are not supported)")
	}
	if t.Config == nil && s.spec.MirroredImage == nil {
		// Read as the build ran: its resolve step chose the image.
		if err := s.mirroredImageEnv(ctx, taskMirroredImage(cfg)); err != nil {
			return false, err
		}
	}
	inputs, err := s.taskInputs(cfg, t.InputMapping, wd)
	if err != nil {
		return false, err
	}
	cred, err := credential(cfg.Run.User)
	if err != nil {
		return false, err
	}
	owner := volumeOwnerOf(cred)
	if err := emptyDir(wd); err != nil {
		return false, err
	}
	if err := owner.give(wd); err != nil {
		return false, fmt.Errorf("preparing %s: %w", wd, err)
	}
	if err := stageInputs(inputs, owner); err != nil {
		return false, err
	}
	outputs, err := prepareOutputs(cfg, wd, owner)
	if err != nil {
		return false, err
	}
	caches, err := s.stageCaches(cfg, wd, owner)
	if err != nil {
		return false, err
	}
	env, dir := s.processEnv(cfg, cred), processDir(cfg, wd)
	path, err := lookPath(cfg.Run.Path, dir, env)
	if err != nil {
		return false, err
	}
	started := time.Now()
	res, err := proc.Run(ctx, proc.Cmd{
		Path:       path,
		Args:       cfg.Run.Args,
		Dir:        dir,
		Env:        env,
		Stdout:     s.stdout,
		TTY:        true,
		Credential: cred,
		Grace:      s.opts.grace,
		Started: func() {
			writeProcessMark(mark)
			s.announceStart()
		},
	})
	if err != nil {
		return false, err
	}
	if !res.Interrupted {
		s.exited(res.ExitStatus)
	}
	if res.Interrupted || res.ExitStatus != 0 {
		// Failed, timed out or aborted: Concourse keeps the container. What the session
		// stages again (inputs, outputs and caches, which may be at absolute paths
		// outside the working directory) is not kept twice.
		own := []string{wd, mark}
		for _, in := range inputs {
			own = append(own, in.dst)
		}
		for _, c := range caches {
			own = append(own, c.dir)
		}
		own = append(own, slices.Collect(maps.Values(outputs))...)
		s.keepRootfs(cred, started, own...)
	}
	// Interrupted or not: Concourse registers the outputs and caches right after
	// process.Wait, before it looks at Wait's error (atc/exec/task_step.go), so a hook
	// after a timeout or an abort reads what the task wrote until then.
	if err := s.registerOutputs(outputs, t.OutputMapping); err != nil {
		return false, err
	}
	if err := s.saveCaches(caches); err != nil {
		return false, err
	}
	if res.Interrupted {
		return false, interruption(ctx)
	}
	return res.ExitStatus == 0, nil
}

// taskInput is an input of a task: the artifact it is a copy of, and where.
type taskInput struct{ name, src, dst string }

// taskInputs finds the artifact of each input of the task. Required inputs with no
// artifact are a MissingInputsError that names them as the plan does, after
// input_mapping (Concourse's containerInputs).
func (s *step) taskInputs(cfg concourse.TaskConfig, mapping map[string]string, wd string) ([]taskInput, error) {
	var inputs []taskInput
	var missing []string
	for _, in := range cfg.Inputs {
		artifact := in.Name
		if m, ok := mapping[in.Name]; ok {
			artifact = m
		}
		volPath, found, err := s.state.Artifact(s.spec.Scope, artifact)
		if err != nil {
			return nil, err
		}
		if !found {
			if !in.Optional {
				missing = append(missing, artifact)
			}
			continue
		}
		p := in.Path
		if p == "" {
			p = in.Name
		}
		inputs = append(inputs, taskInput{name: in.Name, src: filepath.Join(s.paths.Volume, volPath), dst: resolvePath(wd, p)})
	}
	if len(missing) > 0 {
		return nil, MissingInputsError{Inputs: missing}
	}
	return inputs, nil
}

// stageInputs gives the task a private copy of each input's artifact, made for its user.
func stageInputs(inputs []taskInput, owner *volumeOwner) error {
	for _, in := range inputs {
		if err := os.RemoveAll(in.dst); err != nil {
			return fmt.Errorf("mounting input %s: %w", in.name, err)
		}
		if _, err := cowcopy.Tree(in.src, in.dst, owner.copyOptions()); err != nil {
			return fmt.Errorf("mounting input %s: %w", in.name, err)
		}
		if err := owner.give(in.dst); err != nil {
			return fmt.Errorf("mounting input %s: %w", in.name, err)
		}
	}
	return nil
}

// prepareOutputs makes each output's directory, empty unless an input is mounted at the
// same path (then that private copy is the output), for the task's user; it returns them
// by output name.
func prepareOutputs(cfg concourse.TaskConfig, wd string, owner *volumeOwner) (map[string]string, error) {
	out := map[string]string{}
	for _, o := range cfg.Outputs {
		p := o.Path
		if p == "" {
			p = o.Name
		}
		dir := resolvePath(wd, p)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating output %s: %w", o.Name, err)
		}
		if err := owner.give(dir); err != nil {
			return nil, fmt.Errorf("creating output %s: %w", o.Name, err)
		}
		out[o.Name] = dir
	}
	return out, nil
}

// registerOutputs registers each output under its mapped name once the process exited.
func (s *step) registerOutputs(outputs map[string]string, mapping map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(outputs)) {
		artifact := name
		if m, ok := mapping[name]; ok {
			artifact = m
		}
		volPath, err := s.keep(outputs[name], artifact)
		if err != nil {
			return err
		}
		if err := s.state.RegisterArtifact(s.spec.Scope, artifact, volPath); err != nil {
			return err
		}
	}
	return nil
}

// cache is a task cache: its config path, where the task sees it and where the job
// keeps it.
type cache struct{ path, dir, store string }

// stageCaches gives the task a private copy of each cache (empty the first time), made
// for its user.
func (s *step) stageCaches(cfg concourse.TaskConfig, wd string, owner *volumeOwner) ([]cache, error) {
	var caches []cache
	for _, c := range cfg.Caches {
		dir := resolvePath(wd, c.Path)
		if dir == filepath.Clean(wd) {
			// Concourse accepts it (validate warns): the cache would replace the working
			// directory and the inputs in it.
			return nil, fmt.Errorf("cache %q is the task's working directory: give it a path under it", c.Path)
		}
		store := filepath.Join(s.paths.Volume, runspec.CachePath(s.spec.Name, c.Path))
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("mounting cache %s: %w", c.Path, err)
		}
		if err := s.clearIfUnrecorded(c.Path, store); err != nil {
			return nil, fmt.Errorf("mounting cache %s: %w", c.Path, err)
		}
		if _, err := os.Stat(store); err == nil {
			if _, err := cowcopy.Tree(store, dir, owner.copyOptions()); err != nil {
				return nil, fmt.Errorf("mounting cache %s: %w", c.Path, err)
			}
		} else if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("mounting cache %s: %w", c.Path, err)
		}
		if err := owner.give(dir); err != nil {
			return nil, fmt.Errorf("mounting cache %s: %w", c.Path, err)
		}
		caches = append(caches, cache{path: c.Path, dir: dir, store: store})
	}
	return caches, nil
}

// saveCaches makes what the task left in its caches the job's new caches (job builds
// only, as in Concourse); the last writer wins.
func (s *step) saveCaches(caches []cache) error {
	if s.spec.Build.JobName == "" {
		return nil
	}
	for _, c := range caches {
		if err := state.MkdirShared(filepath.Dir(c.store)); err != nil {
			return fmt.Errorf("saving cache %s: %w", c.dir, err)
		}
		next := c.store + ".next-" + runspec.Escape(s.spec.PlanID)
		if err := os.RemoveAll(next); err != nil {
			return fmt.Errorf("saving cache %s: %w", c.dir, err)
		}
		if _, err := cowcopy.Tree(c.dir, next, cowcopy.Options{}); err != nil {
			return fmt.Errorf("saving cache %s: %w", c.dir, err)
		}
		old := c.store + ".old-" + runspec.Escape(s.spec.PlanID)
		if err := os.Rename(c.store, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("saving cache %s: %w", c.dir, err)
		}
		if err := os.Rename(next, c.store); err != nil {
			return fmt.Errorf("saving cache %s: %w", c.dir, err)
		}
		if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("saving cache %s: %w", c.dir, err)
		}
	}
	return s.recordCaches(caches)
}

// cacheRecords are the ATC's records of the step's task caches (nil: not recorded, or
// not a job build, whose caches are not kept).
func (s *step) cacheRecords() *runspec.CacheRecords {
	if s.spec.Task == nil || s.spec.Build.JobName == "" {
		return nil
	}
	return s.spec.Task.CacheRecords
}

// clearIfUnrecorded empties the job's cache of path when its record is gone: the ATC
// deletes a cache's record when it is cleared (fly clear-task-cache), and when the job
// is paused or its pipeline archived, as a worker then loses the cache's volume.
func (s *step) clearIfUnrecorded(path, store string) error {
	rec := s.cacheRecords()
	if rec == nil {
		return nil
	}
	stamp, err := os.ReadFile(filepath.Join(s.paths.Volume, runspec.CacheStampPath(s.spec.Name, path)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if rec.CacheKept(path, string(stamp), s.spec.Build.ID) {
		return nil
	}
	return os.RemoveAll(store)
}

// maxCachesResult bounds the caches result, beside the task's other results in Tekton's
// 4 KiB (resultBudget): a cache path left out of it is never recorded, and so never
// stamped (clearIfUnrecorded keeps it).
const maxCachesResult = 2048

// recordCaches stamps the caches the task saved (runspec.CacheRecords) and lists their
// paths in the caches result, for the ATC to record those it has no record of.
func (s *step) recordCaches(caches []cache) error {
	rec := s.cacheRecords()
	if rec == nil || len(caches) == 0 {
		return nil
	}
	var paths []string
	for _, c := range caches {
		if listed, _ := json.Marshal(append(paths, c.path)); resultSize(listed) > maxCachesResult {
			s.logf("too many caches to record: %s and the ones after it cannot be cleared with fly clear-task-cache", c.path)
			break
		}
		paths = append(paths, c.path)
		stamp := filepath.Join(s.paths.Volume, runspec.CacheStampPath(s.spec.Name, c.path))
		if err := state.MkdirShared(filepath.Dir(stamp)); err != nil {
			return fmt.Errorf("saving cache %s: %w", c.dir, err)
		}
		if err := os.WriteFile(stamp, []byte(rec.Stamp(c.path, s.spec.Build.ID)), 0o644); err != nil {
			return fmt.Errorf("saving cache %s: %w", c.dir, err)
		}
	}
	listed, err := json.Marshal(paths)
	if err != nil {
		return err
	}
	return s.writeResult(runspec.ResultCaches, listed)
}

// processEnv is the environment of a task's process, run as cred: taskEnv, USER for a
// run.user, and a PATH for the user when the image sets none.
func (s *step) processEnv(cfg concourse.TaskConfig, cred *syscall.Credential) []string {
	env := taskEnv(cfg, s.spec.Build.ExternalURL)
	if cfg.Run.User != "" {
		env = setEnv(env, "USER", cfg.Run.User)
	}
	if _, ok := lookupEnv(env, "PATH"); !ok {
		path := nonRootPath
		if cred == nil && os.Geteuid() == 0 || cred != nil && cred.Uid == 0 {
			path = rootPath
		}
		env = append(env, "PATH="+path)
	}
	return env
}

// processDir is the directory a task's process starts in: run.dir in the working
// directory wd, or wd.
func processDir(cfg concourse.TaskConfig, wd string) string {
	if cfg.Run.Dir != "" {
		return resolvePath(wd, cfg.Run.Dir)
	}
	return wd
}

// taskEnv is the task's environment: the container's (the image's), ATC_EXTERNAL_URL,
// then the params. No BUILD_* and no TMPDIR of ours.
func taskEnv(cfg concourse.TaskConfig, externalURL string) []string {
	env := containerEnv(os.Environ())
	if externalURL != "" {
		env = setEnv(env, "ATC_EXTERNAL_URL", externalURL)
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Params)) {
		env = setEnv(env, k, cfg.Params[k])
	}
	return env
}

// containerEnv is the container's environment as Concourse's containers have it: the
// image's and the step's, without the variables the kubelet adds for the cluster's API
// server (KUBERNETES_SERVICE_HOST, KUBERNETES_PORT_443_TCP, ...), which it adds even to
// pods without service links: a step knows nothing of the cluster it runs on. Nor do its
// processes see the runner's own runspec.EnvBuildContext.
func containerEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k == "KUBERNETES_PORT" || strings.HasPrefix(k, "KUBERNETES_PORT_") || strings.HasPrefix(k, "KUBERNETES_SERVICE_") || k == runspec.EnvBuildContext {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func setEnv(env []string, k, v string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); name != k {
			out = append(out, kv)
		}
	}
	return append(out, k+"="+v)
}

func lookupEnv(env []string, k string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if name, v, _ := strings.Cut(env[i], "="); name == k {
			return v, true
		}
	}
	return "", false
}

// lookPath finds run.path as the container would: a path with a slash as it is (relative
// to the process's directory), a bare name in the task's own PATH.
func lookPath(file, dir string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		return file, nil
	}
	path, _ := lookupEnv(env, "PATH")
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		candidate := filepath.Join(d, file)
		if !filepath.IsAbs(candidate) {
			candidate = filepath.Join(dir, candidate)
		}
		if info, err := os.Stat(candidate); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			return candidate, nil
		}
	}
	return "", fmt.Errorf("executable file not found in $PATH: %s", file)
}

// credential is the uid and gids for run.user: a name or a number in the image's
// /etc/passwd. nil means run as the runner runs.
func credential(name string) (*syscall.Credential, error) {
	if name == "" {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		if _, numErr := strconv.Atoi(name); numErr != nil {
			return nil, fmt.Errorf("finding user %s: %w", name, err)
		}
		if u, err = user.LookupId(name); err != nil {
			uid, _ := strconv.ParseUint(name, 10, 32)
			u = &user.User{Uid: strconv.FormatUint(uid, 10), Gid: strconv.FormatUint(uid, 10)}
		}
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s has uid %q: %w", name, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("user %s has gid %q: %w", name, u.Gid, err)
	}
	if uint64(os.Geteuid()) == uid {
		return nil, nil
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("cannot run as user %s: the runner is not root", name)
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if groups, err := u.GroupIds(); err == nil {
		for _, g := range groups {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil {
				cred.Groups = append(cred.Groups, uint32(n))
			}
		}
	}
	return cred, nil
}
