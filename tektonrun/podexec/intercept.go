package podexec

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
)

// Container is a step of a build that can be intercepted: a leaf step (task, get, put,
// check, load_var, set_pipeline) whose TaskRun has a pod.
type Container struct {
	// Run is the build's PipelineRun; Team, Pipeline, Job and Build its Concourse names.
	Run                        string
	Team, Pipeline, Job, Build string
	// Step is the step's name, Type its kind (task, get, put, ...), PlanID its plan node.
	Step, Type, PlanID string
	// Attempt is the attempt of the innermost `attempts` the step is in (1-based), 0 when
	// it is in none.
	Attempt int
	TaskRun string
	Pod     string
	// Running says the step's container runs: a session execs into it. Otherwise a pod is
	// made again from the step's, on the build's volume.
	Running bool
	Created time.Time
	spec    string
	// container is the pod's container the step runs in: the step's (empty), or a
	// check session's.
	container string
}

// execContainer is the container of the pod a session execs into.
func (c Container) execContainer() string {
	return cmp.Or(c.container, runspec.StepContainer)
}

// ContainerFilter narrows Containers: empty fields match everything.
type ContainerFilter struct {
	Run, Step, Type string
	Attempt         int
}

// interceptable are the step kinds whose containers an operator may want to enter.
var interceptable = map[runspec.Mode]bool{
	runspec.ModeTask: true, runspec.ModeGet: true, runspec.ModePut: true, runspec.ModeCheck: true,
	runspec.ModeLoadVar: true, runspec.ModeSetPipeline: true,
}

// Containers lists the steps of the namespace's builds (or of one) that can be
// intercepted, newest first.
func (pe *Pods) Containers(ctx context.Context, f ContainerFilter) ([]Container, error) {
	trs, byName, err := pe.stepsAndPods(ctx, f.Run)
	if err != nil {
		return nil, err
	}
	attempts := map[string]map[string]int{} // run → plan → attempt
	var out []Container
	for i := range trs {
		tr := &trs[i]
		run := tr.Labels[labelPipelineRun]
		if _, ok := attempts[run]; !ok && byName[tr.Status.PodName] != nil {
			attempts[run] = pe.attemptsOf(ctx, run)
		}
		ctr, ok := containerOf(tr, byName[tr.Status.PodName], attempts[run])
		if !ok || f.Step != "" && ctr.Step != f.Step || f.Type != "" && ctr.Type != f.Type || f.Attempt != 0 && ctr.Attempt != f.Attempt {
			continue
		}
		out = append(out, ctr)
	}
	slices.SortFunc(out, func(a, b Container) int {
		return cmp.Or(b.Created.Compare(a.Created), cmp.Compare(a.Run, b.Run), cmp.Compare(a.PlanID, b.PlanID))
	})
	return out, nil
}

// ContainerHandles are the TaskRuns of the namespace's steps whose pods are there, by
// name, and its check sessions' pods that have not ended (SessionHandles): what a
// worker reports as its containers. Cheaper than Containers: three lists.
func (pe *Pods) ContainerHandles(ctx context.Context) ([]string, error) {
	trs, byName, err := pe.stepsAndPods(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, tr := range trs {
		if tr.Status.PodName != "" && byName[tr.Status.PodName] != nil {
			out = append(out, tr.Name)
		}
	}
	sessions, err := pe.SessionHandles(ctx)
	if err != nil {
		return nil, err
	}
	out = append(out, sessions...)
	slices.Sort(out)
	return out, nil
}

// stepsAndPods lists the TaskRuns of the namespace's builds (or of the build whose
// PipelineRun is run), and their pods by name.
func (pe *Pods) stepsAndPods(ctx context.Context, run string) ([]v1.TaskRun, map[string]*corev1.Pod, error) {
	ns := pe.Namespace
	sel := runspec.LabelManagedBy + "=" + runspec.ManagedBy
	if run != "" {
		sel += "," + labelPipelineRun + "=" + run
	}
	trs, err := pe.Tekton.TektonV1().TaskRuns(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, nil, fmt.Errorf("listing steps: %w", err)
	}
	// Tekton labels the pods managed by itself, but with the run's other labels.
	podSel := runspec.LabelBuild
	if run != "" {
		podSel = labelPipelineRun + "=" + run
	}
	pods, err := pe.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: podSel})
	if err != nil {
		return nil, nil, fmt.Errorf("listing pods: %w", err)
	}
	byName := map[string]*corev1.Pod{}
	for i := range pods.Items {
		byName[pods.Items[i].Name] = &pods.Items[i]
	}
	return trs.Items, byName, nil
}

// ContainerOf is the step of a TaskRun, if it can be intercepted: an error that
// apierrors.IsNotFound recognizes when there is no such TaskRun or it is no step's, or
// has no pod.
func (pe *Pods) ContainerOf(ctx context.Context, taskRun string) (Container, error) {
	ns := pe.Namespace
	tr, err := pe.Tekton.TektonV1().TaskRuns(ns).Get(ctx, taskRun, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// A check session's container is its pod.
		if ctr, found, serr := pe.sessionContainer(ctx, taskRun); found || serr != nil {
			return ctr, serr
		}
	}
	if err != nil {
		return Container{}, fmt.Errorf("step %s: %w", taskRun, err)
	}
	notFound := apierrors.NewNotFound(corev1.Resource("pods"), taskRun)
	if tr.Labels[runspec.LabelManagedBy] != runspec.ManagedBy || tr.Status.PodName == "" {
		return Container{}, fmt.Errorf("step %s: %w", taskRun, notFound)
	}
	pod, err := pe.Kube.CoreV1().Pods(ns).Get(ctx, tr.Status.PodName, metav1.GetOptions{})
	if err != nil {
		return Container{}, fmt.Errorf("step %s: %w", taskRun, err)
	}
	ctr, ok := containerOf(tr, pod, pe.attemptsOf(ctx, tr.Labels[labelPipelineRun]))
	if !ok {
		return Container{}, fmt.Errorf("step %s: %w", taskRun, notFound)
	}
	return ctr, nil
}

// containerOf is the step a TaskRun runs in pod (nil: none), if it can be intercepted;
// attempts maps its build's plan IDs to their attempts.
func containerOf(tr *v1.TaskRun, pod *corev1.Pod, attempts map[string]int) (Container, bool) {
	raw := buildevents.Param(tr.Spec.Params, runspec.ParamSpec)
	spec, err := runspec.Decode(raw)
	if err != nil || !interceptable[spec.Mode] || pod == nil || pod.Name != tr.Status.PodName {
		return Container{}, false
	}
	return Container{
		Run: tr.Labels[labelPipelineRun], Team: tr.Annotations[runspec.LabelTeam], Pipeline: tr.Annotations[runspec.LabelPipeline],
		Job: tr.Annotations[runspec.LabelJob], Build: cmp.Or(tr.Annotations[runspec.LabelBuild], tr.Labels[runspec.LabelBuild]),
		Step: spec.Name, Type: string(spec.Mode), PlanID: spec.PlanID, Attempt: attempts[spec.PlanID],
		TaskRun: tr.Name, Pod: pod.Name, Running: stepRunning(pod), Created: tr.CreationTimestamp.Time, spec: raw,
	}, true
}

// attemptsOf maps the plan IDs of a build's leaves to their attempt, from the plan tree
// its verdict holds; nil when it cannot be read.
func (pe *Pods) attemptsOf(ctx context.Context, run string) map[string]int {
	pr, err := pe.Tekton.TektonV1().PipelineRuns(pe.Namespace).Get(ctx, run, metav1.GetOptions{})
	if err != nil || pr.Status.PipelineSpec == nil {
		return nil
	}
	for _, pt := range pr.Status.PipelineSpec.Finally {
		if pt.Name != runspec.VerdictTask {
			continue
		}
		spec, ok := buildevents.ParamsSpec(pt.Params)
		if !ok || spec.Verdict == nil {
			return nil
		}
		out := map[string]int{}
		var walk func(n runspec.Node, attempt int)
		walk = func(n runspec.Node, attempt int) {
			if n.Kind == runspec.KindLeaf {
				out[n.ID] = attempt
			}
			for i, s := range n.Steps {
				if n.Kind == runspec.KindRetry {
					walk(s, i+1)
				} else {
					walk(s, attempt)
				}
			}
			for _, s := range []*runspec.Node{n.Step, n.Hook} {
				if s != nil {
					walk(*s, attempt)
				}
			}
		}
		walk(spec.Verdict.Tree, 0)
		return out
	}
	return nil
}

// InterceptOptions say what an intercept session runs and where its streams go.
type InterceptOptions struct {
	// Command runs in the step's session; empty: bash, else sh.
	Command []string
	// Env is added to the session's environment, replacing a variable of the same name.
	Env []string
	// Dir, when set, is where Command starts, in place of the step's working directory.
	Dir    string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// TTY gives the command a terminal (then Stderr is unused); Sizes, when set, tells
	// it the client's terminal size as it changes.
	TTY   bool
	Sizes remotecommand.TerminalSizeQueue
	// Timeout is how long a pod made again from a finished step's lives at most, even if
	// the session's client dies (default one hour).
	Timeout time.Duration
	// Progress, when set, is told what the session does before it starts.
	Progress func(string)
}

// ExitError is an intercepted command that exited with a status other than 0.
type ExitError struct{ Status int }

func (e *ExitError) Error() string { return "exit status " + strconv.Itoa(e.Status) }

// ExecutableNotFoundError says the command an intercept session was asked to run is not
// in the step's container (its PATH, its working directory).
type ExecutableNotFoundError struct {
	Command string
	// Message is the runner's, saying where it looked.
	Message string
}

func (e *ExecutableNotFoundError) Error() string { return e.Message }

// Intercept runs a command in a step's container, in the step's working directory with
// its environment and user (the runner's intercept mode): in the running container, or,
// for a step that has ended, in a pod made again from its own (same image, environment,
// mounts and security; the build's volume as the step saw it, for as long as the build
// keeps it) that is deleted when the session ends.
func (pe *Pods) Intercept(ctx context.Context, ctr Container, o InterceptOptions) error {
	s, err := pe.StartIntercept(ctx, ctr, o)
	if err != nil {
		return err
	}
	return s.Wait()
}

// Session is a command started in a step's container by StartIntercept.
type Session struct {
	done chan struct{}
	err  error
	stop context.CancelFunc
}

// Wait waits for the session's command to end: nil when it exited 0, an *ExitError with
// its status when it exited otherwise, another error when the session broke.
func (s *Session) Wait() error {
	<-s.done
	return s.err
}

// Stop ends the session: its stream is closed (a command reading a terminal gets a
// hang-up) and a pod made again for it is deleted. Wait then returns.
func (s *Session) Stop() { s.stop() }

// StartIntercept starts what Intercept runs and returns once the command has started,
// or with an *ExecutableNotFoundError when the container has no such command (its
// Command given; an empty one is bash, else sh, and always found).
func (pe *Pods) StartIntercept(ctx context.Context, ctr Container, o InterceptOptions) (*Session, error) {
	if pe.Stream == nil {
		return nil, errors.New("intercepting needs the target's REST config (pods/exec)")
	}
	if err := pe.canExec(ctx, "intercepting a step"); err != nil {
		return nil, err
	}
	say := o.Progress
	if say == nil {
		say = func(string) {}
	}
	pod := ctr.Pod
	command := []string{runspec.RunnerPath, string(runspec.ModeIntercept), "--" + runspec.ParamSpec + "=" + ctr.spec}
	for _, e := range o.Env {
		command = append(command, "--env="+e)
	}
	if o.Dir != "" {
		command = append(command, "--dir="+o.Dir)
	}
	cleanup := func() {}
	if ctr.Running {
		// Tekton starts a pod's step containers together, and each waits for the one
		// before it: the step's own runs once the runner is installed.
		if err := pe.awaitPod(ctx, pod, runnerInstalled); err != nil {
			return nil, err
		}
	} else {
		name, remove, err := pe.remake(ctx, ctr, cmp.Or(o.Timeout, time.Hour), say)
		if err != nil {
			return nil, err
		}
		pod, cleanup = name, remove
	}
	if len(o.Command) > 0 {
		if err := pe.lookup(ctx, pod, ctr.execContainer(), command, o.Command); err != nil {
			cleanup()
			return nil, err
		}
	}
	if !ctr.Running {
		// Its working directory went with its container: the runner makes it again.
		command = append(command, "--stage")
	}
	command = append(append(command, "--"), o.Command...)
	streamCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s := &Session{done: make(chan struct{}), stop: stop}
	go func() {
		defer close(s.done)
		defer stop()
		defer cleanup()
		err := pe.Stream.Stream(streamCtx, pe.Namespace, pod, ctr.execContainer(), command,
			remotecommand.StreamOptions{Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, Tty: o.TTY, TerminalSizeQueue: o.Sizes})
		var exit interface{ ExitStatus() int }
		if errors.As(err, &exit) {
			err = &ExitError{Status: exit.ExitStatus()}
		}
		s.err = err
	}()
	go func() {
		// The caller's context ends the session as Stop does.
		select {
		case <-ctx.Done():
			stop()
		case <-s.done:
		}
	}()
	return s, nil
}

// lookup asks the runner, in the step's session, whether command is there to run.
func (pe *Pods) lookup(ctx context.Context, pod, container string, session, command []string) error {
	if pe.Exec == nil {
		return nil
	}
	args := append(append(slices.Clone(session), "--lookup", "--"), command...)
	out, err := pe.Exec.Exec(ctx, pe.Namespace, pod, container, args)
	var exit interface{ ExitStatus() int }
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit) && exit.ExitStatus() == runspec.InterceptNotFound:
		// The runner says where it looked, on one line. Anything else (nothing, or
		// output the stream garbled) is not shown: the status said it all.
		msg := strings.TrimSpace(out)
		if !oneLine(msg) {
			msg = "executable file not found in $PATH: " + command[0]
		}
		return &ExecutableNotFoundError{Command: command[0], Message: msg}
	case errors.As(err, &exit):
		return fmt.Errorf("starting %s in pod %s: %s", command[0], pod, strings.TrimSpace(out))
	}
	return fmt.Errorf("starting %s in pod %s: %w", command[0], pod, err)
}

// oneLine tells whether s is a line of text: not empty, and printable.
func oneLine(s string) bool {
	return s != "" && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) })
}

// remake starts a pod made again from a finished step's and waits until it runs.
func (pe *Pods) remake(ctx context.Context, ctr Container, timeout time.Duration, say func(string)) (string, func(), error) {
	ns := pe.Namespace
	pods := pe.Kube.CoreV1().Pods(ns)
	orig, err := pods.Get(ctx, ctr.Pod, metav1.GetOptions{})
	if err != nil {
		return "", nil, fmt.Errorf("the pod of step %s: %w", ctr.Step, err)
	}
	pr, err := pe.Tekton.TektonV1().PipelineRuns(ns).Get(ctx, ctr.Run, metav1.GetOptions{})
	if err != nil {
		return "", nil, fmt.Errorf("build %s: %w", ctr.Run, err)
	}
	pod, err := remadePod(orig, pr, timeout)
	if err != nil {
		return "", nil, err
	}
	say(fmt.Sprintf("step %s has ended: starting a pod like its own (%s), for at most %s", ctr.Step, orig.Name, timeout))
	made, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return "", nil, fmt.Errorf("starting a pod for step %s: %w", ctr.Step, err)
	}
	cleanup := func() {
		err := pods.Delete(context.WithoutCancel(ctx), made.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		if err != nil && !apierrors.IsNotFound(err) {
			say(fmt.Sprintf("deleting pod %s: %v", made.Name, err))
		}
	}
	if err := pe.awaitPod(ctx, made.Name, nil); err != nil {
		cleanup()
		return "", nil, err
	}
	return made.Name, cleanup, nil
}

// remadePod is a pod like a finished step's: its step container (image, environment,
// mounts, working directory, security) waits in the runner's hold mode, the runner
// installed first as the step's own pod installs it, with the same volumes (the build's
// volume, the credentials), pod security and scheduling. It is owned by the build's run,
// labelled, and lives at most timeout.
func remadePod(orig *corev1.Pod, pr *v1.PipelineRun, timeout time.Duration) (*corev1.Pod, error) {
	var step, install *corev1.Container
	for i := range orig.Spec.Containers {
		switch orig.Spec.Containers[i].Name {
		case runspec.StepContainer:
			step = &orig.Spec.Containers[i]
		case runspec.InstallContainer:
			install = &orig.Spec.Containers[i]
		}
	}
	if step == nil {
		return nil, fmt.Errorf("pod %s is not a step's: it has no %s container", orig.Name, runspec.StepContainer)
	}
	// The runner is copied by the install step into a volume the step mounts, or the
	// step mounts the runner's image (translate.Options.RunnerImageVolume): then the
	// step's own mounts bring it along.
	mounter := step
	if install != nil {
		mounter = install
	}
	var runnerMount []corev1.VolumeMount
	for _, m := range mounter.VolumeMounts {
		if m.MountPath == runspec.RunnerDir {
			runnerMount = append(runnerMount, m)
		}
	}
	if len(runnerMount) == 0 {
		return nil, fmt.Errorf("pod %s mounts no %s", orig.Name, runspec.RunnerDir)
	}
	if install == nil && !slices.ContainsFunc(orig.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == runnerMount[0].Name && v.Image != nil }) {
		return nil, fmt.Errorf("pod %s is not a step's: it has no %s container, and its %s is not the runner's image", orig.Name, runspec.InstallContainer, runspec.RunnerDir)
	}
	deadline := int64((timeout + time.Minute) / time.Second)
	noToken := false
	main := corev1.Container{
		Name:            runspec.StepContainer,
		Image:           step.Image,
		ImagePullPolicy: step.ImagePullPolicy,
		Command:         []string{runspec.RunnerPath, string(runspec.ModeHold), "--timeout=" + timeout.String()},
		Env:             step.Env,
		EnvFrom:         step.EnvFrom,
		WorkingDir:      step.WorkingDir,
		VolumeMounts:    step.VolumeMounts,
		SecurityContext: step.SecurityContext,
		Resources:       step.Resources,
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: truncateName(orig.Name, "-intercept-"),
			Labels: map[string]string{
				runspec.LabelManagedBy: runspec.ManagedBy,
				runspec.LabelBuild:     orig.Labels[runspec.LabelBuild],
				runspec.LabelIntercept: "true",
			},
			// The step's environment reads the build's context from it.
			Annotations:     map[string]string{runspec.AnnotationBuildContext: orig.Annotations[runspec.AnnotationBuildContext]},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: tektonGroupVersion, Kind: "PipelineRun", Name: pr.Name, UID: pr.UID}},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         &deadline,
			TerminationGracePeriodSeconds: new(int64),
			AutomountServiceAccountToken:  &noToken,
			EnableServiceLinks:            &noToken,
			ServiceAccountName:            orig.Spec.ServiceAccountName,
			SecurityContext:               orig.Spec.SecurityContext,
			HostUsers:                     orig.Spec.HostUsers,
			NodeSelector:                  orig.Spec.NodeSelector,
			Affinity:                      withoutAssistant(orig.Spec.Affinity),
			Tolerations:                   orig.Spec.Tolerations,
			ImagePullSecrets:              orig.Spec.ImagePullSecrets,
			RuntimeClassName:              orig.Spec.RuntimeClassName,
			Volumes:                       orig.Spec.Volumes,
			Containers:                    []corev1.Container{main},
		},
	}
	if install != nil {
		pod.Spec.InitContainers = []corev1.Container{{
			Name:            "install-runner",
			Image:           install.Image,
			ImagePullPolicy: install.ImagePullPolicy,
			Command:         []string{runspec.RunnerBinary, string(runspec.ModeInstall), runspec.RunnerPath},
			VolumeMounts:    runnerMount,
			SecurityContext: install.SecurityContext,
		}}
	}
	return pod, nil
}

// withoutAssistant is a pod's affinity without the term that Tekton's affinity assistant
// adds (to be near the assistant's pod, which goes when the run ends); the build volume's
// own node affinity keeps a pod where the volume is.
func withoutAssistant(a *corev1.Affinity) *corev1.Affinity {
	if a == nil || a.PodAffinity == nil {
		return a
	}
	out := a.DeepCopy()
	terms := out.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[:0]
	for _, t := range out.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if t.LabelSelector != nil && t.LabelSelector.MatchLabels["app.kubernetes.io/component"] == "affinity-assistant" {
			continue
		}
		terms = append(terms, t)
	}
	out.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = terms
	if len(terms) == 0 && len(out.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		out.PodAffinity = nil
	}
	if out.PodAffinity == nil && out.NodeAffinity == nil && out.PodAntiAffinity == nil {
		return nil
	}
	return out
}

// runnerInstalled says whether a running step's pod has installed the runner: at once
// when its runner comes from the runner's image as a volume (no step installs it).
func runnerInstalled(p *corev1.Pod) (bool, error) {
	if !slices.ContainsFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == runspec.InstallContainer }) {
		return true, nil
	}
	for _, s := range p.Status.ContainerStatuses {
		if t := s.State.Terminated; s.Name == runspec.InstallContainer && t != nil {
			if t.ExitCode != 0 {
				return false, fmt.Errorf("pod %s could not install the runner: %s %s", p.Name, t.Reason, t.Message)
			}
			return true, nil
		}
	}
	return false, nil
}
