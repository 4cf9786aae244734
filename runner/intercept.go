package runner

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/concourse-tekton/concourse-tekton/concourse"

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
// run.dir and run.user; for another step, /tmp/build and the container's environment.
// It reads the build volume and the credentials, and writes nothing there. With stage,
// for a step that has ended (its working directory went with its container), it makes
// the task's working directory again: private copies of its inputs, of the outputs it
// registered (empty directories for those it did not) and of its caches.
func (s *step) session(stage bool) (session, error) {
	fallback := session{dir: s.opts.tmpBuild, env: containerEnv(os.Environ())}
	if _, err := os.Stat(fallback.dir); err != nil {
		fallback.dir = "/"
	}
	if err := s.enterSlots(); err != nil {
		return fallback, err
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
	env, dir := s.processEnv(cfg, cred), processDir(cfg, wd)
	sess := session{dir: dir, env: env, cred: cred}
	if stage {
		if err := s.stage(cfg, wd, volumeOwnerOf(cred)); err != nil {
			return sess, err
		}
	}
	return sess, nil
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

// intercept replaces the runner with command (bash, else sh, when empty) in the step's
// session: an operator's shell in a running step's container, or in a pod made again
// from a finished step's (concourse-tekton intercept). It returns only if it cannot.
func intercept(spec runspec.Spec, opts options, stage bool, command []string, stderr io.Writer) int {
	s := newStep(spec, opts, io.Discard, stderr)
	sess, err := s.session(stage)
	if err != nil {
		fmt.Fprintf(stderr, "note: %v: the shell starts in %s with the container's environment\r\n", err, sess.dir)
	}
	if len(command) == 0 {
		command = []string{"sh"}
		if _, err := lookPath("bash", sess.dir, sess.env); err == nil {
			command = []string{"bash"}
		}
	}
	path, err := lookPath(command[0], sess.dir, sess.env)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\r\n", err)
		return 127
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
