package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/concourse-tekton/concourse-tekton/cmd/internal/cli/outdir"
	"github.com/concourse-tekton/concourse-tekton/cmd/internal/cli/varuse"
	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/internal/parallel"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/translate"
	"github.com/concourse-tekton/concourse-tekton/translate/flagopts"
)

type convertFlags struct {
	vars            varFlags
	jobs            []string
	outDir          string
	inputs          []string
	skipUnsupported bool
	pipelineName    string
	team            string
	build           string
	resourceFile    string
	acrossSlots     int
	// shared are the settings the web node has too, but --runner-image-volume's: its
	// choice is runnerVolume's and runnerVolumeAuto's (settings).
	shared flagopts.Flags
	// runnerVolume: the runner's image is each step pod's volume (translate.Options.RunnerImageVolume).
	runnerVolume bool
	// runnerVolumeAuto: run and execute without --runner-image-volume mount the runner's
	// image where the cluster does (flagopts.RunnerVolumeAuto).
	runnerVolumeAuto bool
}

func newConvert(s *streams) *cobra.Command {
	var f convertFlags
	cmd := &cobra.Command{
		Use:   "convert PIPELINE...",
		Short: "Compile pipelines' jobs into Tekton objects (YAML for kubectl apply)",
		Long: `Compile each job of a pipeline into a Tekton Pipeline, with a PipelineRun that runs one
build of it and the Tasks its steps share. The YAML goes to stdout, or one file per object
into the directory given with -o. Progress and warnings go to stderr.

Several pipelines are compiled in one process; one PIPELINE may be - for standard input.
Their YAML documents follow the order of the arguments, each pipeline's Tasks (those not
written already) first; every flag but -j and --pipeline, which speak of one pipeline,
applies to each of them, and no two may have the same name. When any pipeline cannot be
converted, each failure is reported and nothing is written.

With -o, the files appear all at once or, when something fails, not at all. The files an
earlier conversion of the same pipeline wrote there and this one does not (a job removed,
renamed or left out) are removed with it; with -j, those of the jobs not selected stay.
Files this tool did not write are never touched. A file that holds a value given with -v,
-y or -l is readable by its owner only (mode 0600); so is every file of a pipeline that
uses a credential whose value is too short to be looked for (under 4 characters).

Values of -v, -y and -l are written into the objects as plain text, the way fly
set-pipeline stores them in the pipeline's config. A var whose name looks like a credential
(password, secret, token, key, private, cred, cert, ...) is warned about: leave it as
((var)) and the build reads it from a Kubernetes Secret at run time.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			defer batchGC()()
			return s.convert(args, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.jobs, "job", "j", nil, "a job to convert (repeatable; default: every job)")
	fl.StringVarP(&f.outDir, "output-dir", "o", "", "write one file per object into this directory instead of stdout, replacing those of an earlier conversion")
	fl.BoolVar(&f.skipUnsupported, "skip-unsupported", false, "leave out, with a warning, the jobs that use something that cannot be converted")
	fl.StringVar(&f.build, "build", "1", "the build name of the PipelineRuns")
	f.registerCompile(cmd)
	return cmd
}

// runnerVolumeUsage says what --runner-image-volume does and needs.
const runnerVolumeUsage = "mount the runner's image into each step pod as a volume instead of copying the runner in with a container of its own (a container fewer a pod; the cluster must support image volumes: Kubernetes 1.35+, containerd 2.1+ or CRI-O 1.31+)"

// runnerVolumeRunUsage is runnerVolumeUsage for the commands that run builds, which ask
// the cluster when the flag is not given.
const runnerVolumeRunUsage = "mount the runner's image into each step pod as a volume instead of copying the runner in with a container of its own (a container fewer a pod); default: as the cluster supports it (its API server and every node Kubernetes 1.35+, with containerd 2.1+ or CRI-O 1.31+); =false copies the runner in"

// defaultTaskImageUsage says what --default-task-image does.
const defaultTaskImageUsage = "the image of a task whose config names none (no image_resource, no rootfs_uri) and whose step has no image, as Concourse runs such a task in its worker's default root file system (default: none, and such a task is refused)"

// mountRunnerByDefault makes a command that runs builds mount the runner's image where
// the cluster can when --runner-image-volume is not given: call it in its RunE.
func (f *convertFlags) mountRunnerByDefault(cmd *cobra.Command) {
	f.runnerVolumeAuto = !cmd.Flags().Changed("runner-image-volume")
}

// newBackend connects to the target, with the backend's compile options and the runner
// mounted or copied as the flags say.
func (f *convertFlags) newBackend(t *tektonrun.Target, opts translate.Options) *tektonrun.Backend {
	b := tektonrun.NewBackend(t, opts)
	if f.settings().MountRunnerWhereSupported() {
		b.MountRunnerWhereSupported()
	}
	return b
}

// registerCompile registers the flags that say how a pipeline is compiled: vars, names,
// images, scheduling and volumes.
func (f *convertFlags) registerCompile(cmd *cobra.Command) {
	f.vars.register(cmd)
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.inputs, "input", "i", nil, "an artifact's local directory, as name=dir, to read `file:` task configs from at convert time (repeatable)")
	fl.StringVar(&f.pipelineName, "pipeline", "", "the pipeline's name (default: the file's name without extension)")
	fl.StringVar(&f.team, "team", "main", "the team the pipeline belongs to")
	fl.StringVar(&f.shared.RunnerImage, "runner-image", translate.DefaultRunnerImage, "the step runner's image")
	fl.BoolVar(&f.runnerVolume, "runner-image-volume", false, runnerVolumeUsage)
	fl.StringVar(&f.shared.DefaultTaskImage, flagopts.DefaultTaskImage, "", defaultTaskImageUsage)
	fl.StringArrayVar(&f.shared.ResourceImages, "resource-image", nil, "the image of a base resource type, as TYPE=IMAGE (repeatable)")
	fl.StringVar(&f.resourceFile, "resource-images", "", "a YAML file mapping base resource types to images")
	fl.StringArrayVar(&f.shared.NodeSelectors, "tag", nil, "run steps with a worker tag on matching nodes, as TAG=LABEL=VALUE (repeatable)")
	fl.StringVar(&f.shared.ServiceAccount, "service-account", "", "the service account the build's pods run as")
	registerIdentity(fl, &f.shared)
	fl.StringVar(&f.shared.StorageClass, "storage-class", "", "the storage class of build volumes (default: the cluster's)")
	fl.StringVar(&f.shared.BuildVolumeSize, "build-volume-size", "1Gi", "the size of each build's volume")
	fl.BoolVar(&f.shared.UserNamespaces, "user-namespaces", false, "run every step that is not privileged in a user namespace of its own (hostUsers: false): root in the container, unprivileged on the node")
	fl.StringVar(&f.shared.ImageRegistry, "image-registry", "", "the registry (HOST[:PORT][/PATH]) that tasks running an artifact as their image (a task's output, a get of a type other than registry-image) pull it from: the cluster's nodes must pull from it and the build's pods reach it")
	fl.StringVar(&f.shared.ImageRegistrySecret, "image-registry-secret", "", "the Secret (kubernetes.io/dockerconfigjson) with the image registry's credentials for pushing (default: "+runspec.DefaultImageRegistrySecret+", if it exists)")
	fl.IntVar(&f.acrossSlots, "across-slots", translate.DefaultAcrossSlots, "how many combinations an across step whose values are known only at run time can run (the Pipeline holds that many copies of its substep)")
}

// options turns flags into the translate options of a pipeline, but its task files
// (TaskFiles), which it returns the artifacts' directories of -i to read from.
func (f *convertFlags) options(pipelinePath string, p *concourse.Pipeline) (translate.Options, map[string]fs.FS, error) {
	opts, inputs, err := f.flagOptions()
	if err != nil {
		return opts, nil, err
	}
	if opts.Pipeline == "" {
		opts.Pipeline = pipelineName(pipelinePath)
	}
	for _, vs := range p.Config.VarSources {
		opts.VarSources = append(opts.VarSources, vs.Name)
	}
	return opts, inputs, nil
}

// pipelineName is the name of the pipeline of a file: the file's name without extension,
// or its folder's for ci/pipeline.yml-like paths.
func pipelineName(path string) string {
	if path == "-" {
		return "pipeline"
	}
	base := filepath.Base(path)
	name := strings.TrimSuffix(base, filepath.Ext(base))
	if name == "pipeline" {
		// ci/pipeline.yml or booklit/pipeline.yml: the folder names it better.
		if dir := filepath.Base(filepath.Dir(path)); dir != "." && dir != "/" && dir != "ci" {
			return dir
		}
	}
	return name
}

// settings are the flags the web node has too, with --runner-image-volume's choice.
func (f *convertFlags) settings() flagopts.Flags {
	s := f.shared
	switch {
	case f.runnerVolumeAuto:
		s.RunnerVolume = flagopts.RunnerVolumeAuto
	case f.runnerVolume:
		s.RunnerVolume = flagopts.RunnerVolumeAlways
	default:
		s.RunnerVolume = flagopts.RunnerVolumeNever
	}
	return s
}

// flagName spells a shared setting's flag as the CLI does: --tag gives node selectors.
func flagName(setting string) string {
	if setting == flagopts.NodeSelector {
		return "--tag"
	}
	return "--" + setting
}

// flagOptions are the translate options the flags alone give, whatever the pipeline, and
// the artifacts' directories of -i. Every mistake of the flags is said, in one error.
func (f *convertFlags) flagOptions() (translate.Options, map[string]fs.FS, error) {
	opts, err := f.settings().Options(flagName)
	errs := []error{err}
	opts.Team, opts.Pipeline, opts.Build, opts.AcrossSlots = f.team, f.pipelineName, f.build, f.acrossSlots
	if f.acrossSlots < 1 {
		errs = append(errs, fmt.Errorf("invalid --across-slots %d: it must be at least 1", f.acrossSlots))
	}
	if f.resourceFile != "" {
		// The file's images are laid under --resource-image's.
		var images map[string]string
		data, err := readFile(f.resourceFile)
		if err == nil {
			if err = yaml.UnmarshalStrict(data, &images); err != nil {
				err = fmt.Errorf("%s: must map resource types to images: %w", f.resourceFile, err)
			}
		}
		errs = append(errs, err)
		for typ, img := range images {
			if _, given := opts.ResourceImages[typ]; !given {
				opts.ResourceImages[typ] = img
			}
		}
	}
	inputs, err := artifactDirs(f.inputs)
	return opts, inputs, errors.Join(append(errs, err)...)
}

// artifactDirs are the artifacts' local directories of -i (name=dir), from which task
// files are read. Every mistake is said, in one error.
func artifactDirs(flags []string) (map[string]fs.FS, error) {
	inputs := map[string]fs.FS{}
	var errs []error
	for _, in := range flags {
		name, dir, ok := strings.Cut(in, "=")
		if !ok || name == "" || dir == "" {
			errs = append(errs, fmt.Errorf("invalid --input %q: use name=dir", in))
			continue
		}
		inputs[name] = os.DirFS(dir)
	}
	return inputs, errors.Join(errs...)
}

// loadVars reads the pipeline and the options to compile it with, the task files of -i
// among them (their warnings said on stderr), and the static vars interpolated into the
// pipeline.
func (s *streams) loadVars(path string, f *convertFlags) (*concourse.Pipeline, translate.Options, []varuse.Var, error) {
	p, used, err := s.loadPipelineVars(path, &f.vars)
	if err != nil {
		return nil, translate.Options{}, nil, err
	}
	opts, inputs, err := f.options(path, p)
	if err != nil {
		return nil, opts, nil, err
	}
	files, diags := p.LoadTaskFiles(inputs)
	s.warn(diags)
	if err := diags.Err(); err != nil {
		return nil, opts, nil, err
	}
	opts.TaskFiles = files
	return p, opts, used, nil
}

// converted is what convert made of one pipeline.
type converted struct {
	file     string // the name in diagnostics
	opts     translate.Options
	keepJobs map[string]bool // the jobs -j did not select
	// What is kept of its objects, in apply order (Tasks first): their kinds and names,
	// their YAML documents, and the static vars whose values each holds. The objects
	// themselves go once converted: a pipeline's are several times its documents' size.
	names   []objectName
	docs    [][]byte
	held    [][]string
	secrets []string
	// pulls say, for each PipelineRun whose pods pull images with credentials, the
	// Secret of them it names and the registries it holds.
	pulls []string
	jobs  int
}

// convert compiles every pipeline (at the same time, each saying what it says in the
// order of paths), then writes all their objects at once: to stdout in
// the order of paths, each pipeline's Tasks (those an earlier one did not write) before
// its Pipelines and PipelineRuns, or into the -o directory. When any pipeline fails,
// every failure is reported and nothing is written.
func (s *streams) convert(paths []string, f *convertFlags) error {
	if err := stdinOnce(paths); err != nil {
		return err
	}
	if len(paths) > 1 {
		// Flag mistakes are said once, not once a pipeline.
		if f.pipelineName != "" {
			return errors.New("--pipeline names one pipeline: give one PIPELINE with it, or leave it out to name each pipeline after its file")
		}
		if len(f.jobs) > 0 {
			return errors.New("-j selects the jobs of one pipeline: give one PIPELINE with it")
		}
		if _, err := f.vars.read(); err != nil {
			return err
		}
		if _, _, err := f.flagOptions(); err != nil {
			return err
		}
	}
	each := make([]*converted, len(paths))
	errs := make([]error, len(paths))
	var convs []*converted
	var failed []string
	files := map[string]string{} // pipeline name -> the file converted into it
	err := s.eachPath(paths, func(i int, own *streams) {
		each[i], errs[i] = own.convertOne(paths[i], f)
	}, func(i int) error {
		path := paths[i]
		c, err := each[i], errs[i]
		if err == nil {
			if other, ok := files[c.opts.Pipeline]; ok {
				err = fmt.Errorf("%s and %s are both pipeline %q: convert them one at a time with --pipeline, or rename one", other, c.file, c.opts.Pipeline)
			}
		}
		if err != nil {
			if len(paths) == 1 {
				return err
			}
			if name := inputName(path); !strings.Contains(err.Error(), name) {
				err = fmt.Errorf("%s: %w", name, err)
			}
			fmt.Fprintf(s.err, "error: %v\n", err)
			failed = append(failed, path)
			return nil
		}
		files[c.opts.Pipeline] = c.file
		convs = append(convs, c)
		return nil
	})
	if err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d pipelines could not be converted, nothing was written: %s", len(failed), len(paths), strings.Join(failed, ", "))
	}
	names, docs, held := mergeConverted(convs)
	if f.outDir != "" {
		conv := outdir.Conversion{Team: f.team, Pipelines: map[string]map[string]bool{}}
		for _, c := range convs {
			conv.Pipelines[c.opts.Pipeline] = c.keepJobs
		}
		if err := writeOutDir(f.outDir, names, docs, held, conv); err != nil {
			return err
		}
	} else {
		if err := writeStream(s.out, docs); err != nil {
			return err
		}
	}
	s.warnPlainText(held)
	var secrets, pulls []string
	for _, c := range convs {
		fmt.Fprintf(s.err, "converted %s of %s\n", plural(c.jobs, "job"), c.file)
		secrets = append(secrets, c.secrets...)
		pulls = append(pulls, c.pulls...)
	}
	if len(secrets) > 0 {
		fmt.Fprintf(s.err, "credentials are read at run time from these Secrets, where they exist: %s\n", strings.Join(uniq(secrets), ", "))
	}
	if len(pulls) > 0 {
		fmt.Fprintf(s.err, "images are pulled with their sources' credentials from a Secret of the build (kubernetes.io/dockerconfigjson), which `concourse-tekton run` makes; to start these PipelineRuns yourself, create: %s\n", strings.Join(pulls, ", "))
	}
	return nil
}

// mergeConverted lists the objects of pipelines in order, each Task once (Task names are
// hashes of their specs: one name, one object), with their documents and the vars each
// holds.
func mergeConverted(convs []*converted) ([]objectName, [][]byte, [][]string) {
	var names []objectName
	var docs [][]byte
	var held [][]string
	tasks := map[string]bool{}
	for _, c := range convs {
		for i, n := range c.names {
			if n.kind == "Task" {
				if tasks[n.name] {
					continue
				}
				tasks[n.name] = true
			}
			names = append(names, n)
			docs = append(docs, c.docs[i])
			held = append(held, c.held[i])
		}
	}
	return names, docs, held
}

// writeStream writes documents as one YAML stream, the stream translate.MarshalYAML makes.
func writeStream(w io.Writer, docs [][]byte) error {
	// A buffer of 64 KiB at most, no larger than the stream: a small pipeline's stream
	// is a few kilobytes.
	size := 0
	for _, doc := range docs {
		size += len(doc) + len("---\n")
	}
	out := bufio.NewWriterSize(w, min(size, 64<<10))
	for i, doc := range docs {
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(doc)
	}
	return out.Flush()
}

// convertOne compiles the jobs of one pipeline (those of -j, or every job).
func (s *streams) convertOne(path string, f *convertFlags) (*converted, error) {
	p, opts, used, err := s.loadVars(path, f)
	if err != nil {
		return nil, err
	}
	c := &converted{file: p.File, opts: opts, keepJobs: map[string]bool{}}
	jobs := f.jobs
	if len(jobs) == 0 {
		for _, j := range p.Config.Jobs {
			jobs = append(jobs, j.Name)
		}
	} else {
		for _, j := range p.Config.Jobs {
			if !slices.Contains(f.jobs, j.Name) {
				c.keepJobs[j.Name] = true
			}
		}
	}
	// The jobs compile, and their Pipelines and PipelineRuns render, at the same time;
	// what each made is then taken in their order, so that the output, the warnings and
	// the error that stops the conversion are those of a conversion one job after
	// another.
	compiled := make([]compiledJob, len(jobs))
	parallel.ForEach(len(jobs), 1, func() func(int) {
		var scratch []byte
		return func(i int) { compiled[i] = compileJob(p, opts, jobs[i], used, &scratch) }
	})
	// In apply order: Tasks, so that kubectl apply creates them before what refers to
	// them, then Pipelines, then PipelineRuns.
	var tasks []any
	var taskDocs, pipelineDocs, runDocs [][]byte
	var pipelines, runs []objectName
	var pipelinesHeld, runsHeld [][]string
	taken := map[string]bool{}
	for i, name := range jobs {
		j := &compiled[i]
		if j.err != nil {
			if f.skipUnsupported && j.unsupported {
				fmt.Fprintf(s.err, "warning: %v (job %s left out)\n", j.err, name)
				continue
			}
			return nil, j.err
		}
		for _, w := range j.warnings {
			fmt.Fprintf(s.err, "warning: %s\n", w)
		}
		c.jobs++
		for _, t := range j.tasks {
			if !taken[t.Name] {
				taken[t.Name] = true
				// A step Task's document was rendered once for the process.
				doc, err := translate.ObjectYAML(t)
				if err != nil {
					return nil, fmt.Errorf("job %s: %w", name, err)
				}
				tasks, taskDocs = append(tasks, t), append(taskDocs, doc)
			}
		}
		pipelines, pipelineDocs, pipelinesHeld = append(pipelines, j.names[0]), append(pipelineDocs, j.docs[0]), append(pipelinesHeld, j.held[0])
		runs, runDocs, runsHeld = append(runs, j.names[1]), append(runDocs, j.docs[1]), append(runsHeld, j.held[1])
		c.secrets = append(c.secrets, j.secrets...)
		if j.pulls != "" {
			c.pulls = append(c.pulls, j.pulls)
		}
	}
	tasksHeld, err := varsHeld(tasks, used)
	if err != nil {
		return nil, err
	}
	taskNames := make([]objectName, len(tasks))
	for i, t := range tasks {
		taskNames[i] = nameOf(t)
	}
	c.names = slices.Concat(taskNames, pipelines, runs)
	c.docs = slices.Concat(taskDocs, pipelineDocs, runDocs)
	c.held = slices.Concat(tasksHeld, pipelinesHeld, runsHeld)
	return c, nil
}

// objectName is an object's kind and name.
type objectName struct{ kind, name string }

// nameOf is the kind and name of obj, a Kubernetes object whose TypeMeta is set.
func nameOf(obj any) objectName {
	return objectName{kind: obj.(runtime.Object).GetObjectKind().GroupVersionKind().Kind, name: obj.(metav1.Object).GetName()}
}

// maxStoredObject is the most the API server stores of an object: etcd's default
// request limit (--max-request-bytes), which Tekton's objects (custom resources, stored as
// JSON) meet as JSON.
const maxStoredObject = 3 << 19 // 1.5 MiB

// minStepJSON is less than any step's share of its Pipeline's JSON: a get of a resource
// of a one-letter name, the smallest, takes about 580 bytes of it, a task of a file 1,370.
const minStepJSON = 256

// planSteps counts the core steps of a plan (not those of the images of its resource
// types), each of which its Pipeline holds a task for: a job of more steps than the API
// server can store is refused before it is translated, which for 100,000 steps took 13 s
// and 1.5 GB.
func planSteps(plan *concourse.Plan) int {
	n := 0
	plan.EachStep(func(p *concourse.Plan) {
		if p.Get != nil || p.Put != nil || p.Task != nil || p.SetPipeline != nil || p.LoadVar != nil || p.Check != nil {
			n++
		}
	})
	return n
}

// storable refuses an object whose JSON the API server would not store. Its YAML, of
// yamlSize bytes, is about its JSON's size: only an object of a megabyte or more is
// encoded again to tell.
func storable(obj any, yamlSize int) error {
	if yamlSize < 1<<20 {
		return nil
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if len(data) <= maxStoredObject {
		return nil
	}
	o := nameOf(obj)
	return fmt.Errorf("its %s %s is %.1f MiB, over the %.1f MiB the API server stores of an object (etcd's request limit): split the job, or shorten its steps' configs",
		o.kind, o.name, float64(len(data))/(1<<20), float64(maxStoredObject)/(1<<20))
}

// compiledJob is what is kept of a job's compilation: the documents of its Pipeline and
// PipelineRun, their names and the static vars each holds, and what the conversion says
// of the job; not the objects, which go once rendered (a job's are several times its
// documents' size, and a pipeline's jobs compile before any is written). Its Tasks are
// the process's step Tasks, rendered once a process.
type compiledJob struct {
	// err is the planner's error, or the translator's, worded at the step it came from;
	// unsupported says it is an UnsupportedError (--skip-unsupported leaves the job out).
	err         error
	unsupported bool
	warnings    []string
	tasks       []*v1.Task
	docs        [][]byte // the Pipeline's and the PipelineRun's
	names       []objectName
	held        [][]string
	secrets     []string
	// pulls says which Secret of pull credentials the PipelineRun names, and the
	// registries it holds; "" when it names none.
	pulls string
}

// compileJob plans a build of the job, translates it and renders its Pipeline and
// PipelineRun, in *scratch (a buffer the caller's goroutine reuses). It reads p and opts
// only, so that jobs compile at the same time.
func compileJob(p *concourse.Pipeline, opts translate.Options, job string, used []varuse.Var, scratch *[]byte) compiledJob {
	b, err := planner.PlanBuild(p, job, planner.Options{ManuallyTriggered: true})
	if err != nil {
		return compiledJob{err: err}
	}
	if n := planSteps(&b.Plan); n > maxStoredObject/minStepJSON {
		return compiledJob{err: jobError(p, job, fmt.Errorf("its %d steps make a Pipeline over the %.1f MiB the API server stores of an object (etcd's request limit), at %d bytes or more each: split the job",
			n, float64(maxStoredObject)/(1<<20), minStepJSON))}
	}
	opts.Job = job
	opts.BuildLogRetention = b.Retention
	r, err := translate.Translate(b.Plan, opts)
	if err != nil {
		var u *translate.UnsupportedError
		return compiledJob{err: errors.New(stepError(p, b.Paths, job, err)), unsupported: errors.As(err, &u)}
	}
	j := compiledJob{tasks: r.Tasks, secrets: r.Secrets}
	for _, w := range r.Warnings {
		j.warnings = append(j.warnings, stepWarning(p, b.Paths, job, w))
	}
	objects := []any{r.Pipeline, r.PipelineRun}
	for _, obj := range objects {
		if *scratch, err = translate.AppendYAML((*scratch)[:0], obj); err != nil {
			return compiledJob{err: errors.New(stepError(p, b.Paths, job, err))}
		}
		if err := storable(obj, len(*scratch)); err != nil {
			return compiledJob{err: jobError(p, job, err)}
		}
		// Each document at its size: a buffer grown to megabytes would be copied and
		// cleared again and again.
		j.docs = append(j.docs, bytes.Clone(*scratch))
		j.names = append(j.names, nameOf(obj))
	}
	if j.held, err = varsHeld(objects, used); err != nil {
		return compiledJob{err: err}
	}
	if len(r.ImagePulls) > 0 {
		regs := make([]string, len(r.ImagePulls))
		for i, pull := range r.ImagePulls {
			regs[i] = translate.PullRegistry(pull.Repository)
			if strings.Contains(pull.Repository, "((") {
				regs[i] = pull.Repository
			}
		}
		j.pulls = fmt.Sprintf("%s (%s)", r.ImagePullSecret.Name, strings.Join(regs, ", "))
	}
	return j
}

// stepError says what went wrong translating a job: an unsupported construct at the step
// of the pipeline its plan node came from (paths are planner.Build's), anything else as
// the job's.
func stepError(p *concourse.Pipeline, paths map[concourse.PlanID]concourse.Path, job string, err error) string {
	var u *translate.UnsupportedError
	if errors.As(err, &u) {
		if at, ok := paths[u.PlanID]; ok {
			return p.Diagnostic(concourse.SeverityError, at, "%s", u.Reason).Error()
		}
	}
	return fmt.Sprintf("job %s: %v", job, err)
}

// jobError is err at the job's place in the pipeline.
func jobError(p *concourse.Pipeline, job string, err error) error {
	for i, j := range p.Config.Jobs {
		if j.Name == job {
			return errors.New(p.Diagnostic(concourse.SeverityError, concourse.Path{concourse.Key("jobs"), concourse.Named(i, job)}, "%s", err).Error())
		}
	}
	return fmt.Errorf("job %s: %w", job, err)
}

// stepWarning is a construct that compiled but will error when the build runs, at the
// step of the pipeline its plan node came from.
func stepWarning(p *concourse.Pipeline, paths map[concourse.PlanID]concourse.Path, job string, w *translate.UnsupportedError) string {
	if at, ok := paths[w.PlanID]; ok {
		return p.Diagnostic(concourse.SeverityWarning, at, "%s", w.Reason).Error()
	}
	return fmt.Sprintf("job %s: %v", job, w)
}

func uniq(in []string) []string {
	sort.Strings(in)
	var out []string
	for i, s := range in {
		if i == 0 || s != in[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// varsHeld lists, for each object, the static vars whose values it holds.
func varsHeld(objects []any, used []varuse.Var) ([][]string, error) {
	held := make([][]string, len(objects))
	if len(used) == 0 {
		return held, nil
	}
	for i, obj := range objects {
		raw, err := json.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("encoding %T: %w", obj, err)
		}
		if held[i], err = varuse.Held(raw, used); err != nil {
			return nil, err
		}
	}
	return held, nil
}

// warnPlainText names, once each, the vars that look like credentials and whose values are
// written out as plain text. Never their values.
func (s *streams) warnPlainText(held [][]string) {
	seen := map[string]bool{}
	var names []string
	for _, vs := range held {
		for _, name := range vs {
			if !seen[name] && varuse.LooksLikeCredential(name) {
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(s.err, "warning: ((%s)) looks like a credential, and its value is written into the Tekton objects as plain text: do not give it with -v, -y or -l, leave it as ((%s)) so that the build reads it from a Secret at run time\n", name, name)
	}
}

// writeObjects writes one file per object into dir, all at once (see outdir.Replace),
// removing the files of earlier conversions that conv leaves over. A file is named after
// its object's kind and name, taken from the object (not read back from its document);
// one that holds a static var's value is readable by its owner only.
func writeObjects(ctx context.Context, dir string, names []objectName, docs [][]byte, held [][]string, conv outdir.Conversion) error {
	files := make([]outdir.File, 0, len(docs))
	conv.Files = map[string]bool{}
	for i, doc := range docs {
		perm := fs.FileMode(0o644)
		if len(held[i]) > 0 {
			perm = 0o600
		}
		name := outdir.FileName(names[i].kind, names[i].name)
		files = append(files, outdir.File{Name: name, Data: doc, Perm: perm})
		conv.Files[name] = true
	}
	written, err := outdir.ReadWritten(dir)
	if err != nil {
		return fmt.Errorf("reading what an earlier conversion wrote: %w", err)
	}
	return outdir.Replace(ctx, dir, files, conv.Stale(written))
}

// writeOutDir is writeObjects until SIGINT or SIGTERM: one that comes before the files are
// committed leaves dir as it was, one after lets them all be written; either way the
// command then ends as the signal's (130, 143).
func writeOutDir(dir string, names []objectName, docs [][]byte, held [][]string, conv outdir.Conversion) error {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got os.Signal
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case got = <-signals:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := writeObjects(ctx, dir, names, docs, held, conv)
	cancel()
	<-done
	if got == nil {
		return err
	}
	code := 130
	if got == syscall.SIGTERM {
		code = 143
	}
	if errors.Is(err, context.Canceled) {
		return &exitError{code: code, err: fmt.Errorf("interrupted: nothing was written to %s", dir)}
	}
	if err != nil {
		return err
	}
	return &exitError{code: code, err: fmt.Errorf("interrupted once every file was committed: %s holds the whole conversion", dir)}
}

// registerIdentity registers the flags of the steps' cloud identities (Identity).
func registerIdentity(fl *pflag.FlagSet, shared *flagopts.Flags) {
	fl.StringArrayVar(&shared.TagAccounts, flagopts.TagAccount, nil, "run the steps with a worker tag as a service account, with its token projected into the step alone (a cloud identity), as TAG=SERVICE_ACCOUNT (repeatable; default: no step has a token)")
	fl.StringVar(&shared.IdentityAudience, flagopts.IdentityAudience, translate.DefaultIdentityAudience, "the audience of the token of a step with a service account")
	fl.DurationVar(&shared.IdentityExpiration, flagopts.IdentityLifetime, translate.DefaultIdentityExpiration*time.Second, "the lifetime of that token (10m at least)")
}
