package runner

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runner/cowcopy"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// session is where a shell in a step's container starts: the step's working directory,
// environment and user, as its process had them.
type session struct {
	dir  string
	env  []string
	cred *syscall.Credential
}

// session works out the step's session as the step does before it starts its process:
// for a task, its config (with its params and the build's vars), working directory,
// run.dir and run.user; for a get or a put, /tmp/build/get or /tmp/build/put (with
// await, once the running step made it); for another
// step, /tmp/build; the container's environment but for a task. It reads the build
// volume and the credentials, and writes nothing there. With stage, for a step that has
// ended (its working directory went with its container), it makes the working directory
// again: a task's private copies of its inputs, of the outputs it registered (empty
// directories for those it did not) and of its caches; a put's of its inputs; a get's
// of what it fetched.
func (s *step) session(stage, await bool) (session, error) {
	fallback := session{dir: s.opts.tmpBuild, env: containerEnv(os.Environ())}
	if _, err := os.Stat(fallback.dir); err != nil {
		fallback.dir = "/"
	}
	if err := s.enterSlots(); err != nil {
		return fallback, err
	}
	if m := s.spec.Mode; m == runspec.ModeGet || m == runspec.ModePut {
		// Concourse's get and put containers start in /tmp/build/get and /tmp/build/put.
		dir := filepath.Join(s.opts.tmpBuild, string(m))
		if await {
			if err := s.awaitProcess(dir); err != nil {
				return fallback, err
			}
		}
		if stage {
			if err := s.stageResourceDir(dir); err != nil {
				return fallback, err
			}
			if err := s.restoreKeptRootfs(nil); err != nil {
				return fallback, err
			}
		}
		if _, err := os.Stat(dir); err != nil {
			return fallback, nil
		}
		return session{dir: dir, env: fallback.env}, nil
	}
	t := s.spec.Task
	if s.spec.Mode != runspec.ModeTask || t == nil {
		return fallback, nil
	}
	raw, err := s.rawTaskConfig(s.spec.PlanID, t)
	if err != nil {
		return fallback, err
	}
	cfg, err := s.taskConfig(raw, t.Params)
	if err != nil {
		return fallback, err
	}
	cred, err := credential(cfg.Run.User)
	if err != nil {
		return fallback, err
	}
	wd := workDir(s.opts.tmpBuild, s.spec.Name)
	if await {
		if err := s.awaitProcess(wd); err != nil {
			return fallback, err
		}
	}
	env, dir := s.processEnv(cfg, cred), processDir(cfg, wd)
	sess := session{dir: dir, env: env, cred: cred}
	if stage {
		if err := s.stage(cfg, wd, volumeOwnerOf(cred)); err != nil {
			return sess, err
		}
		if err := s.restoreKeptRootfs(cred); err != nil {
			return sess, err
		}
	}
	return sess, nil
}

// processWait bounds how long a session of a running step waits for its process to
// start: the container runs from the pod's start, and the step's runner may still be
// staging its inputs, or waiting for the pod's steps before it.
var processWait = 5 * time.Minute

// awaitProcess waits until the running step (a task, a get, a put) whose working
// directory is wd has started its process, or ended without one (processMark), saying so
// on stderr if that is not at once.
func (s *step) awaitProcess(wd string) error {
	mark := processMark(wd)
	start := time.Now()
	noted := false
	for {
		if _, err := os.Stat(mark); err == nil {
			return nil
		}
		if time.Since(start) > processWait {
			return fmt.Errorf("the step's process has not started within %s", processWait)
		}
		if !noted && time.Since(start) > time.Second {
			fmt.Fprintf(s.stderr, "waiting for the step's process to start...\r\n")
			noted = true
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stageResourceDir makes a get's or put's directory again, unless it is there (on the
// build volume, as a get's is when /tmp/build is its work directory): private copies of
// the put's inputs, of the get's fetched artifact.
func (s *step) stageResourceDir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	artifacts := map[string]string{}
	if s.spec.Mode == runspec.ModePut && s.spec.Put != nil {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		inputs, err := s.putInputs()
		if err != nil {
			return err
		}
		for name, volPath := range inputs {
			artifacts[filepath.Join(dir, name)] = volPath
		}
	} else {
		volPath, found, err := s.state.Artifact(s.spec.Scope, s.spec.Name)
		if err != nil || !found {
			return errors.Join(err, os.Mkdir(dir, 0o755))
		}
		artifacts[dir] = volPath
	}
	var problems []error
	for _, dst := range slices.Sorted(maps.Keys(artifacts)) {
		if _, err := cowcopy.Tree(filepath.Join(s.paths.Volume, artifacts[dst]), dst, cowcopy.Options{}); err != nil {
			problems = append(problems, fmt.Errorf("staging %s: %w", filepath.Base(dst), err))
		}
	}
	return errors.Join(problems...)
}

// stage makes a task's working directory again from the build volume.
func (s *step) stage(cfg concourse.TaskConfig, wd string, owner *volumeOwner) error {
	if err := emptyDir(wd); err != nil {
		return err
	}
	if err := owner.give(wd); err != nil {
		return err
	}
	var problems []error
	inputs, err := s.taskInputs(cfg, s.spec.Task.InputMapping, wd)
	if err != nil {
		problems = append(problems, err)
	}
	for _, o := range cfg.Outputs {
		artifact := cmp.Or(s.spec.Task.OutputMapping[o.Name], o.Name)
		dst := resolvePath(wd, cmp.Or(o.Path, o.Name))
		volPath, found, err := s.state.Artifact(s.spec.Scope, artifact)
		switch {
		case err != nil:
			problems = append(problems, err)
		case found:
			inputs = append(inputs, taskInput{name: o.Name, src: filepath.Join(s.paths.Volume, volPath), dst: dst})
		default:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				problems = append(problems, err)
			}
		}
	}
	problems = append(problems, stageInputs(inputs, owner))
	if _, err := s.stageCaches(cfg, wd, owner); err != nil {
		problems = append(problems, err)
	}
	return errors.Join(problems...)
}

// sessionFlags are what an intercept session is asked for beside its command.
type sessionFlags struct {
	// stage makes a finished step's working directory again (see step.session).
	stage bool
	// lookup only says whether the command is there: exit 0, else runspec.InterceptNotFound.
	lookup bool
	// dir, when set, is where the command starts; env is added to its environment.
	dir string
	env []string
}

// intercept replaces the runner with command (bash, else sh, when empty) in the step's
// session: an operator's shell in a running step's container, or in a pod made again
// from a finished step's (concourse-tekton intercept, fly intercept). It returns only if
// it cannot, or with lookup once it knows whether command is there.
func intercept(spec runspec.Spec, opts options, f sessionFlags, command []string, stdout, stderr io.Writer) int {
	if f.stage {
		// An ended step of a build that failed: its volume is kept under preserved/.
		spec.Paths.Volume = preservedRoot(spec.Paths.WithDefaults().Volume, spec.Build.Name)
	}
	s := newStep(spec, opts, io.Discard, stderr)
	// A running task's session (not a lookup, which only looks at PATH) starts once
	// its process has.
	sess, err := s.session(f.stage && !f.lookup, !f.stage && !f.lookup)
	if err != nil && !f.lookup {
		fmt.Fprintf(stderr, "note: %v: the shell starts in %s with the container's environment\r\n", err, sess.dir)
	}
	if f.dir != "" {
		sess.dir = resolvePath(sess.dir, f.dir)
	}
	sess.env = withEnv(sess.env, f.env)
	if len(command) == 0 {
		command = []string{"sh"}
		if _, err := lookPath("bash", sess.dir, sess.env); err == nil {
			command = []string{"bash"}
		}
	}
	path, err := lookPath(command[0], sess.dir, sess.env)
	if err == nil && strings.Contains(command[0], "/") {
		// A path is taken as it is by lookPath: it must be there, and be a file.
		if info, serr := os.Stat(path); serr != nil || info.IsDir() {
			err = fmt.Errorf("no such file: %s", path)
		}
	}
	if f.lookup {
		if err != nil {
			fmt.Fprintf(stdout, "%v\n", err)
			return runspec.InterceptNotFound
		}
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\r\n", err)
		return runspec.InterceptNotFound
	}
	if err := os.Chdir(sess.dir); err != nil {
		fmt.Fprintf(stderr, "error: %v\r\n", err)
		return 1
	}
	if c := sess.cred; c != nil {
		groups := make([]int, len(c.Groups))
		for i, g := range c.Groups {
			groups[i] = int(g)
		}
		if err := setUser(int(c.Uid), int(c.Gid), groups); err != nil {
			fmt.Fprintf(stderr, "error: becoming user %d: %v\r\n", c.Uid, err)
			return 1
		}
	}
	err = syscall.Exec(path, command, sess.env)
	fmt.Fprintf(stderr, "error: starting %s: %v\r\n", path, err)
	return 126
}

// withEnv is env with more (NAME=VALUE) set over it.
func withEnv(env, more []string) []string {
	for _, kv := range more {
		name, value, _ := strings.Cut(kv, "=")
		env = setEnv(env, name, value)
	}
	return env
}

// setUser switches the process to a user, for good.
func setUser(uid, gid int, groups []int) error {
	if os.Geteuid() == uid {
		return nil
	}
	if err := syscall.Setgroups(groups); err != nil {
		return err
	}
	if err := syscall.Setgid(gid); err != nil {
		return err
	}
	return syscall.Setuid(uid)
}
