package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/concourse-tekton/concourse-tekton/cmd/internal/cli/varuse"
	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/internal/tarstream"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/podexec"
	"github.com/concourse-tekton/concourse-tekton/translate"
	"github.com/concourse-tekton/concourse-tekton/translate/flagopts"
)

type executeFlags struct {
	config         string
	inputs         []string
	outputs        []string
	privileged     bool
	includeIgnored bool
	tags           []string
	background     bool
	build          string
	inputsFrom     string
	image          string
	mappings       []string
	compile        convertFlags
	watch          watchFlags
}

func newExecute(s *streams) *cobra.Command {
	var f executeFlags
	var target tektonrun.TargetOptions
	cmd := &cobra.Command{
		Use:   "execute -c TASK [-i NAME=DIR]... [-o NAME=DIR]... [-j PIPELINE/JOB [-m IN=JOB_IN]... [--image IN]] [-- ARGS...]",
		Short: "Run a task config with local inputs on the cluster, like fly execute",
		Long: `Run a task config as a one-off build on the cluster, like fly execute: each input given
with -i NAME=DIR is uploaded from a local directory (without what .gitignore leaves out of
a git work tree, unless --include-ignored), the task runs in a PipelineRun of its own,
its output is shown as it comes, and each output given with -o NAME=DIR is downloaded into
a local directory once the build has ended, whatever its outcome. An input named after the
current directory is taken from it when not given. With -j PIPELINE/JOB, the inputs not
given are the job's (its get steps, from its Pipeline in the namespace, at the versions its
latest builds fetched; -m maps a task input to a job input of another name), and --image
runs the task in the image one of them fetches. Arguments after -- are appended to the
task's run.args. Vars (-v, -y, -l) fill in the task config's ((vars)); the others are
read from the namespace's Secrets when the task runs.

Uploads and downloads go through the API server (pods/exec into a short-lived pod that
mounts the build's volume): no registry and no node path is needed. Transfers longer than
a second print their progress on stderr.

The exit code is fly's: the task's exit status when it is not 0, else 0 succeeded,
1 failed, 2 errored, 3 aborted. Ctrl-C during the uploads stops them and leaves nothing
behind; later it aborts the build (its outputs are still downloaded); a second Ctrl-C
detaches.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.config == "" {
				return errors.New("no task config given: use -c TASK")
			}
			f.compile.mountRunnerByDefault(cmd)
			return s.execute(cmd.Context(), &f, target, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.config, "config", "c", "", "the task config to execute")
	fl.StringArrayVarP(&f.inputs, "input", "i", nil, "an input of the task, from a local directory, as NAME=DIR (repeatable)")
	fl.StringArrayVarP(&f.outputs, "output", "o", nil, "an output of the task, downloaded into a local directory, as NAME=DIR (repeatable)")
	fl.BoolVarP(&f.privileged, "privileged", "p", false, "run the task privileged")
	fl.BoolVar(&f.includeIgnored, "include-ignored", false, "upload the files .gitignore leaves out too")
	fl.StringArrayVar(&f.tags, "tag", nil, "a worker tag of the task (repeatable); TAG=LABEL=VALUE also runs it on nodes with that label")
	fl.BoolVarP(&f.background, "background", "b", false, "start the build and exit, without following it (no outputs then)")
	fl.StringVar(&f.build, "build", "", "the build's name (default: the next one-off build number)")
	fl.StringVarP(&f.inputsFrom, "inputs-from", "j", "", "take the inputs not given with -i from a job of the namespace, as PIPELINE/JOB: its get steps, at the versions its latest builds fetched")
	fl.StringArrayVarP(&f.mappings, "input-mapping", "m", nil, "with -j, take a task input from the job's input of another name, as TASK_INPUT=JOB_INPUT (repeatable)")
	fl.StringVar(&f.image, "image", "", "with -j, run the task in the image the job's input of this name fetches")
	f.compile.vars.register(cmd)
	fl.StringVar(&f.compile.team, "team", "main", "the team the build belongs to")
	fl.StringVar(&f.compile.shared.RunnerImage, "runner-image", translate.DefaultRunnerImage, "the step runner's image")
	fl.BoolVar(&f.compile.runnerVolume, "runner-image-volume", false, runnerVolumeRunUsage)
	fl.StringVar(&f.compile.shared.DefaultTaskImage, flagopts.DefaultTaskImage, "", defaultTaskImageUsage)
	fl.StringArrayVar(&f.compile.shared.ResourceImages, "resource-image", nil, "the image of a base resource type, as TYPE=IMAGE (repeatable)")
	fl.StringVar(&f.compile.resourceFile, "resource-images", "", "a YAML file mapping base resource types to images")
	fl.StringVar(&f.compile.shared.ServiceAccount, "service-account", "", "the service account the build's pods run as")
	registerIdentity(fl, &f.compile.shared)
	fl.StringVar(&f.compile.shared.StorageClass, "storage-class", "", "the storage class of the build volume (default: the cluster's)")
	fl.StringVar(&f.compile.shared.BuildVolumeSize, "build-volume-size", "1Gi", "the size of the build's volume")
	fl.BoolVar(&f.compile.shared.UserNamespaces, "user-namespaces", false, "run the task, unless privileged, in a user namespace of its own (hostUsers: false)")
	fl.StringVar(&f.compile.shared.ImageRegistry, "image-registry", "", "with --image naming a job input that is not a registry image, the registry (HOST[:PORT][/PATH]) it is pushed to for the task's pod to pull")
	fl.StringVar(&f.compile.shared.ImageRegistrySecret, "image-registry-secret", "", "the Secret (kubernetes.io/dockerconfigjson) with the image registry's credentials for pushing (default: "+runspec.DefaultImageRegistrySecret+", if it exists)")
	f.watch.register(cmd)
	addTargetFlags(cmd, &target)
	return cmd
}

// localDir is a task input or output and its local directory.
type localDir struct{ name, dir string }

// parsePairs reads NAME=DIR flags, checking each name against the task's.
func parsePairs(flag string, pairs []string, known map[string]bool, what string) ([]localDir, error) {
	var out []localDir
	seen := map[string]bool{}
	for _, p := range pairs {
		name, dir, ok := strings.Cut(p, "=")
		if !ok || name == "" || dir == "" {
			return nil, fmt.Errorf("invalid %s %q: use NAME=DIR", flag, p)
		}
		if !known[name] {
			return nil, fmt.Errorf("unknown %s `%s`", what, name)
		}
		if seen[name] {
			return nil, fmt.Errorf("%s `%s` given twice", what, name)
		}
		seen[name] = true
		out = append(out, localDir{name, dir})
	}
	return out, nil
}

// oneOff is what execute runs: the task config with its vars, the directories it
// uploads and downloads, and the inputs it takes from a job.
type oneOff struct {
	cfg     concourse.TaskConfig
	uploads []localDir
	outputs []localDir
	gets    []concourse.GetPlan
	mapping map[string]string
	images  map[string]string // resource type → image, for the job's gets
	used    []varuse.Var
}

// executePlan decides what execute runs, as fly execute does: the task config read with
// its vars and args; each input from a local directory (-i, or the current directory's
// for the input named after it), else, with -j, from the job's input of its name (or of
// the name -m maps it to); the outputs to download (-o). jobInput (nil without -j) looks
// the job's inputs up. Nothing on the cluster is touched.
func (s *streams) executePlan(f *executeFlags, args []string, cwd string, jobInput func(string) (tektonrun.JobInput, bool)) (*oneOff, error) {
	vf, err := f.compile.vars.read()
	if err != nil {
		return nil, err
	}
	name, data, err := s.readInput(f.config)
	if err != nil {
		return nil, err
	}
	rec := varuse.NewRecorder(vf.Variables())
	cfg, diags := concourse.LoadTaskConfig(name, data, concourse.TaskFileOptions{Vars: rec, ImageGiven: f.image != ""})
	s.warn(diags)
	if err := diags.Err(); err != nil {
		return nil, fmt.Errorf("%s is not a valid task config:\n%w", name, err)
	}
	cfg.Run.Args = append(cfg.Run.Args, args...)
	o := &oneOff{cfg: cfg, used: rec.Used(), images: map[string]string{}, mapping: map[string]string{}}
	mapping := map[string]string{}

	taskInputs := map[string]bool{}
	for _, in := range cfg.Inputs {
		taskInputs[in.Name] = true
	}
	inputs, err := parsePairs("-i", f.inputs, taskInputs, "input")
	if err != nil {
		return nil, err
	}
	given := map[string]bool{}
	for _, in := range inputs {
		given[in.name] = true
		info, err := os.Stat(in.dir)
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", in.name, err)
		}
		if !info.IsDir() {
			return nil, fmt.Errorf("input %s: %s is not a directory", in.name, in.dir)
		}
	}
	if len(f.mappings) > 0 || f.image != "" {
		if jobInput == nil {
			return nil, errors.New("-m and --image name inputs of a job: give the job with -j PIPELINE/JOB")
		}
	}
	for _, m := range f.mappings {
		in, jobIn, ok := strings.Cut(m, "=")
		if !ok || in == "" || jobIn == "" {
			return nil, fmt.Errorf("invalid -m %q: use TASK_INPUT=JOB_INPUT", m)
		}
		if !taskInputs[in] {
			return nil, fmt.Errorf("unknown input `%s`", in)
		}
		mapping[in] = jobIn
	}
	// fly: the current directory is the input named after it, unless given (and not
	// when the inputs come from a job).
	if here := filepath.Base(cwd); jobInput == nil && taskInputs[here] && !given[here] {
		inputs, given[here] = append(inputs, localDir{here, cwd}), true
	}
	if f.image != "" {
		ji, ok := jobInput(f.image)
		if !ok {
			return nil, fmt.Errorf("the job has no input `%s` for --image", f.image)
		}
		o.cfg.ImageResource = &concourse.ImageResource{Type: ji.Get.Type, Source: ji.Get.Source, Params: ji.Get.Params}
		if ji.Get.Version != nil {
			o.cfg.ImageResource.Version = *ji.Get.Version
		}
		o.images[ji.Get.Type] = ji.Image
	}
	// In the task's order, as fly takes them.
	for _, in := range cfg.Inputs {
		if given[in.Name] {
			for _, l := range inputs {
				if l.name == in.Name {
					o.uploads = append(o.uploads, l)
				}
			}
			continue
		}
		if jobInput != nil {
			if ji, ok := jobInput(cmp.Or(mapping[in.Name], in.Name)); ok {
				o.gets = append(o.gets, ji.Get)
				o.images[ji.Get.Type] = ji.Image
				if ji.Name != in.Name {
					o.mapping[in.Name] = ji.Name
				}
				continue
			}
		}
		if !in.Optional {
			return nil, fmt.Errorf("missing required input `%s`: give it with -i %s=DIR", in.Name, in.Name)
		}
	}
	taskOutputs := map[string]bool{}
	for _, out := range cfg.Outputs {
		taskOutputs[out.Name] = true
	}
	if o.outputs, err = parsePairs("-o", f.outputs, taskOutputs, "output"); err != nil {
		return nil, err
	}
	if len(o.outputs) > 0 && f.background {
		return nil, errors.New("background execution cannot withstand outputs")
	}
	return o, nil
}

func (s *streams) execute(ctx context.Context, f *executeFlags, target tektonrun.TargetOptions, args []string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	var tags concourse.Tags
	for _, t := range f.tags {
		tag, selector, hasSelector := strings.Cut(t, "=")
		if tag == "" {
			return fmt.Errorf("invalid --tag %q: use TAG or TAG=LABEL=VALUE", t)
		}
		tags = append(tags, tag)
		if hasSelector {
			f.compile.shared.NodeSelectors = append(f.compile.shared.NodeSelectors, tag+"="+selector)
		}
	}
	f.compile.pipelineName, f.compile.build, f.compile.acrossSlots = "one-off", f.build, translate.DefaultAcrossSlots
	opts, _, err := f.compile.options("", &concourse.Pipeline{})
	if err != nil {
		return err
	}
	// Without -j, a mistake is found before the cluster is asked anything.
	var o *oneOff
	if f.inputsFrom == "" {
		if o, err = s.executePlan(f, args, cwd, nil); err != nil {
			return err
		}
	}
	t, err := dialTarget(target)
	if err != nil {
		return err
	}
	if f.inputsFrom != "" {
		pipeline, job, ok := strings.Cut(f.inputsFrom, "/")
		if !ok || pipeline == "" || job == "" || strings.Contains(job, "/") {
			return fmt.Errorf("invalid -j %q: use PIPELINE/JOB", f.inputsFrom)
		}
		client := tektonrun.NewClient(t)
		inputs, err := client.JobInputs(ctx, opts.Team, pipeline, job)
		client.Close()
		if err != nil {
			return err
		}
		jobInput := func(name string) (tektonrun.JobInput, bool) {
			for _, in := range inputs {
				if in.Name == name {
					return in, true
				}
			}
			return tektonrun.JobInput{}, false
		}
		if o, err = s.executePlan(f, args, cwd, jobInput); err != nil {
			return err
		}
	}
	for typ, image := range o.images {
		if _, given := opts.ResourceImages[typ]; !given && image != "" {
			opts.ResourceImages[typ] = image
		}
	}
	backend := f.compile.newBackend(t, opts)
	defer backend.Close()
	plan := planner.PlanOneOff(o.cfg, planner.OneOff{Privileged: f.privileged, Tags: tags, Gets: o.gets, InputMapping: o.mapping, Inputs: names(o.uploads), Outputs: names(o.outputs)})
	dirs := map[string]string{}
	for _, in := range o.uploads {
		dirs[in.name] = in.dir
	}
	outputs, used := o.outputs, o.used

	signals := notifySignals()
	defer signal.Stop(signals)
	// Until the build exists, Ctrl-C stops the uploads, and nothing is left behind.
	uploadCtx, stopUploads := context.WithCancel(ctx)
	uploaded := make(chan struct{})
	go func() {
		select {
		case <-signals:
			fmt.Fprintln(s.err, "interrupted: stopping the uploads")
			stopUploads()
		case <-uploaded:
		}
	}()
	source := func(ctx context.Context, in translate.ArtifactInput) (io.ReadCloser, error) {
		return s.uploadDir(ctx, in.Name, dirs[in.Name], f.includeIgnored)
	}
	build, err := backend.Run(uploadCtx, plan, tektonrun.BuildMeta{Team: opts.Team, Build: opts.Build}, tektonrun.OneOff(source))
	close(uploaded)
	interrupted := uploadCtx.Err() != nil
	stopUploads()
	if err != nil {
		if interrupted {
			return &exitError{code: exitDetached, err: errors.New("interrupted before the build started: nothing was left on the cluster")}
		}
		var unsupported *translate.UnsupportedError
		if errors.As(err, &unsupported) {
			return fmt.Errorf("%s: %s", f.config, unsupported.Reason)
		}
		return err
	}
	for _, w := range build.Warnings {
		fmt.Fprintf(s.err, "warning: %s\n", w)
	}
	if build.Compiled != nil {
		for _, w := range build.Compiled.Warnings {
			fmt.Fprintf(s.err, "warning: %s: %s\n", f.config, w.Reason)
		}
	}
	if held, err := varsHeld(build.Compiled.Objects(), used); err == nil {
		s.warnPlainText(held)
	}
	fmt.Fprintf(s.err, "executing build %s (pipelinerun %s/%s)\n", build.Meta.Build, build.Namespace, build.Name)
	if f.background {
		return nil
	}
	watchErr := s.watch(ctx, build, f.watch, signals)
	var ee *exitError
	if errors.As(watchErr, &ee) && ee.code == exitDetached {
		return watchErr
	}
	if err := s.download(ctx, build, outputs); err != nil {
		return errors.Join(fmt.Errorf("downloading failed: %w", err), watchErr)
	}
	return watchErr
}

// uploadDir streams a local directory as a tar stream: the files git does not ignore
// there (as fly execute uploads), or all of them.
func (s *streams) uploadDir(ctx context.Context, name, dir string, includeIgnored bool) (io.ReadCloser, error) {
	var files []string
	if !includeIgnored {
		files = gitFiles(ctx, dir)
	}
	r, w := io.Pipe()
	p := newProgress(s.err, "uploading", name)
	go func() {
		// Large writes: the exec stream sends what each write gives it as a frame.
		buf := bufio.NewWriterSize(p.writer(w), 1<<20)
		err := tarstream.Write(buf, dir, files)
		if err == nil {
			err = buf.Flush()
		}
		p.done(err)
		w.CloseWithError(err)
	}()
	return r, nil
}

// gitFiles lists the files of dir that git tracks or does not ignore, as fly does (git
// ls-files: tracked, less deleted, plus untracked not ignored); nil (every file) when dir
// is not in a git work tree or git cannot say.
func gitFiles(ctx context.Context, dir string) []string {
	list := func(args ...string) ([]string, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"ls-files", "-z"}, args...)...)
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil {
			return nil, err
		}
		var files []string
		for _, f := range bytes.Split(out.Bytes(), []byte{0}) {
			if len(f) > 0 {
				files = append(files, string(f))
			}
		}
		return files, nil
	}
	tracked, err := list()
	if err != nil {
		return nil
	}
	deleted, err := list("--deleted")
	if err != nil {
		return nil
	}
	untracked, err := list("--others", "--exclude-standard")
	if err != nil {
		return nil
	}
	gone := map[string]bool{}
	for _, d := range deleted {
		gone[d] = true
	}
	files := []string{}
	for _, t := range tracked {
		if !gone[t] {
			files = append(files, t)
		}
	}
	return append(files, untracked...)
}

// download fetches the outputs of a one-off build that has ended into their directories,
// in parallel, as fly does whatever the build's outcome.
func (s *streams) download(ctx context.Context, build *tektonrun.Build, outputs []localDir) error {
	if len(outputs) == 0 {
		return nil
	}
	arts, err := build.Artifacts(ctx)
	if err != nil {
		return err
	}
	defer arts.Close(ctx)
	errs := make([]error, len(outputs))
	var wg sync.WaitGroup
	for i, out := range outputs {
		wg.Go(func() {
			r, w := io.Pipe()
			p := newProgress(s.err, "downloading", out.name)
			extracted := make(chan error, 1)
			go func() {
				err := tarstream.Extract(bufio.NewReaderSize(r, 1<<20), out.dir)
				r.CloseWithError(err)
				extracted <- err
			}()
			err := arts.Download(ctx, out.name, p.writer(w))
			w.CloseWithError(err)
			extractErr := <-extracted
			if errors.Is(err, podexec.ErrNoArtifact) {
				// The task never ran to make it: as fly, nothing to download.
				p.done(nil)
				return
			}
			errs[i] = errors.Join(err, extractErr)
			p.done(errs[i])
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func names(dirs []localDir) []string {
	var out []string
	for _, d := range dirs {
		out = append(out, d.name)
	}
	return out
}
