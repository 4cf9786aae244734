package runner

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/concourse-tekton/concourse-tekton/runner/proc"
	"github.com/concourse-tekton/concourse-tekton/runner/state"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// Fixed paths of Concourse's containers; tests move them with hidden flags.
const (
	defaultTmpBuild    = "/tmp/build"
	defaultResourceDir = "/opt/resource"
	defaultPoll        = 250 * time.Millisecond
)

// Clock tells the time; tests need not replace it, but deadlines are computed through it
// so that the rule is in one place.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

var _ Clock = systemClock{}

// options are the runner's fixed paths and timings.
type options struct {
	// image is the step's image (the resource type's, for a get): part of what a
	// resource cache is of.
	image       string
	tmpBuild    string
	resourceDir string
	// rootfs is the container's root file system, whose changes a failed step keeps for
	// an intercept session (keepRootfs).
	rootfs     string
	grace      time.Duration
	poll       time.Duration
	clock      Clock
	publishing publishing
	// resourceCacheIndex is the team's index of shared resource caches, mounted (see
	// sharedStore): with the registry and namespace of publishing, a job's get shares
	// what it fetches with the team's other jobs.
	resourceCacheIndex string
	// verdict, when set, is the build's verdict (runspec.Verdict.Fused), which the step's
	// runner records once the step succeeded, in the step's own container: the build's
	// only step (a check build's).
	verdict *runspec.Spec
	// framedVersions has a check write every version it found in its versions' frame,
	// however few (a check session's runner reads them there).
	framedVersions bool
}

// exit codes that are not outcomes: the command line itself was wrong.
const exitUsage = 2

// Main runs the runner with the arguments after the program name and returns its exit
// code. SIGTERM and SIGINT stop the step (Kubernetes stops a pod that way: deleted,
// evicted): it errors, or is interrupted when its build was aborted. Only the receive
// and session modes read stdin.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := stopOnSignal(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return run(ctx, args, stdin, stdout, stderr)
}

// stopOnSignal is signal.NotifyContext whose context ends with errStopped as its cause.
func stopOnSignal(parent context.Context, signals ...os.Signal) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, signals...)
	go func() {
		select {
		case <-ch:
			cancel(errStopped)
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel(nil)
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "error: usage: concourse-runner <mode>|step --spec=<json> | install DEST | abort [--volume=DIR] | hold | serve | session | session-key | receive --dir=DIR --name=NAME | send --name=NAME")
		return exitUsage
	}
	mode := runspec.Mode(args[0])
	fs := flag.NewFlagSet("concourse-runner "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	specJSON := fs.String(runspec.ParamSpec, "", "the step's runspec.Spec as JSON")
	verdictJSON := fs.String(runspec.ParamVerdictSpec, "", "the build's verdict, which this step records once it succeeded (runspec.Spec as JSON)")
	volume := fs.String("volume", runspec.DefaultVolume, "abort, receive, send: where the build volume is mounted")
	timeout := fs.Duration("timeout", time.Hour, "hold: how long to wait at most")
	dir := fs.String("dir", "", "receive: the artifact's directory, relative to the build volume; intercept: where the command starts, in place of the step's working directory")
	name := fs.String("name", "", "receive, send: the artifact's name")
	stage := fs.Bool("stage", false, "intercept: make the working directory of a step that has ended again from the build volume")
	var session sessionFlags
	fs.BoolVar(&session.lookup, "lookup", false, "intercept: only say whether the command is there to run: exit 0, else 127")
	fs.Func("env", "intercept: NAME=VALUE added to the session's environment (repeatable)", func(v string) error {
		if !strings.Contains(v, "=") {
			return fmt.Errorf("%q is not NAME=VALUE", v)
		}
		session.env = append(session.env, v)
		return nil
	})
	opts := options{clock: systemClock{}}
	fs.StringVar(&opts.image, "image", "", "the step's image (a get's resource cache is of it)")
	fs.StringVar(&opts.publishing.registry, "image-registry", "", "publish, and a get's shared resource caches: the build's image registry, HOST[:PORT][/PATH]")
	fs.StringVar(&opts.publishing.namespace, "image-namespace", "", "publish, and a get's shared resource caches: the build's namespace, the repository's element")
	fs.StringVar(&opts.publishing.tag, "image-tag", "", "publish: the tag to push the image under")
	fs.StringVar(&opts.publishing.tool, "x-image-tool", runspec.ImageTool, "hidden: the image tool, for tests")
	fs.StringVar(&opts.publishing.auth, "x-registry-auth", runspec.RegistryAuthDir, "hidden: the registry's Docker config directory, for tests")
	fs.StringVar(&opts.resourceCacheIndex, "x-resource-cache-index", runspec.ResourceCacheIndexDir, "hidden: the team's index of shared resource caches, for tests")
	fs.StringVar(&opts.publishing.scratch, "x-scratch", "/scratch", "hidden: an empty directory of the step's own, for tests")
	fs.StringVar(&opts.tmpBuild, "x-tmp-build", defaultTmpBuild, "hidden: Concourse's /tmp/build, for tests")
	fs.StringVar(&opts.rootfs, "x-rootfs", "/", "hidden: the container's root file system, for tests")
	fs.StringVar(&opts.resourceDir, "x-resource-dir", defaultResourceDir, "hidden: Concourse's /opt/resource, for tests")
	fs.DurationVar(&opts.grace, "x-grace", proc.DefaultGrace, "hidden: SIGTERM to SIGKILL grace period, for tests")
	fs.DurationVar(&opts.poll, "x-poll", defaultPoll, "hidden: how often markers are polled, for tests")
	sessionRoot := fs.String("x-session-root", runspec.SessionRoot, "hidden: a check session's directory of its checks, for tests")
	sessionCreds := fs.String("x-session-creds", runspec.SessionCreds, "hidden: a check session's directory of its checks' credentials, for tests")
	sessionPort := fs.Int("x-session-port", runspec.SessionPort, "hidden: the port a check session serves checks on (0: any), for tests")
	if err := fs.Parse(args[1:]); err != nil {
		return exitUsage
	}
	switch mode {
	case runspec.ModeInstall:
		if fs.NArg() != 1 {
			fmt.Fprintln(stderr, "error: usage: concourse-runner install DEST")
			return exitUsage
		}
		if err := install(fs.Arg(0)); err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
		return 0
	case runspec.ModeAbort:
		if err := state.New(*volume).Abort(opts.clock.Now()); err != nil {
			fmt.Fprintf(stderr, "error: aborting the build: %v\n", err)
			return 1
		}
		fmt.Fprintln(stderr, runspec.AbortWritten)
		return 0
	case runspec.ModeHold:
		return hold(ctx, *timeout)
	case runspec.ModeServe:
		if fs.NArg() != 0 || *specJSON != "" {
			fmt.Fprintln(stderr, "error: usage: concourse-runner serve [--timeout=DURATION] [--image=IMAGE]")
			return exitUsage
		}
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "error: finding the runner's own binary: %v\n", err)
			return 1
		}
		// Each check is the session mode, with the flags this runner was given.
		child := []string{exe, string(runspec.ModeSession)}
		fs.Visit(func(f *flag.Flag) {
			if f.Name != "timeout" && f.Name != "x-session-port" {
				child = append(child, "--"+f.Name+"="+f.Value.String())
			}
		})
		return serveChecks(ctx, *timeout, *sessionPort, *sessionCreds, child, stderr)
	case runspec.ModeSessionKey:
		if err := sessionKey(ctx, *sessionCreds, stdout); err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
		return 0
	case runspec.ModeSession:
		if fs.NArg() != 0 || *specJSON != "" {
			fmt.Fprintln(stderr, "error: usage: concourse-runner session (the check's request on stdin)")
			return exitUsage
		}
		return checkSession(ctx, *sessionRoot, *sessionCreds, opts, stdin, stdout, stderr)
	case runspec.ModeReceive, runspec.ModeSend:
		var err error
		if mode == runspec.ModeReceive {
			err = receive(*volume, *dir, *name, stdin)
		} else {
			err = send(*volume, *name, stdout)
		}
		if err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
		return 0
	}
	if fs.NArg() != 0 && mode != runspec.ModeIntercept {
		fmt.Fprintf(stderr, "error: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	spec, err := decodeSpec(*specJSON)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return runspec.Errored.ExitCode()
	}
	if mode == runspec.ModeIntercept {
		session.stage, session.dir = *stage, *dir
		return intercept(spec, opts, session, fs.Args(), stdout, stderr)
	}
	if mode != runspec.ModeStep && spec.Mode != mode {
		fmt.Fprintf(stderr, "error: the command line says %s but the spec says %s\n", mode, spec.Mode)
		return runspec.Errored.ExitCode()
	}
	if *verdictJSON != "" {
		v, err := decodeSpec(*verdictJSON)
		if err == nil && (v.Verdict == nil || !v.Verdict.Fused) {
			err = errors.New("the verdict's spec is not one a step records (runspec.Verdict.Fused)")
		}
		if err != nil {
			fmt.Fprintf(stderr, "error: --%s: %v\n", runspec.ParamVerdictSpec, err)
			return runspec.Errored.ExitCode()
		}
		opts.verdict = &v
	}
	return runStep(ctx, spec, opts, stdout, stderr)
}

// decodeSpec decodes a spec of the command line, its build completed with the build's
// context that the step Task gives the runner (runspec.EnvBuildContext).
func decodeSpec(data string) (runspec.Spec, error) {
	spec, err := runspec.Decode(data)
	if err != nil {
		return spec, err
	}
	return spec, spec.Build.Complete(os.Getenv(runspec.EnvBuildContext))
}

// install copies the running executable to dest, atomically, executable by everyone.
func install(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding my own executable: %w", err)
	}
	in, err := os.Open(self)
	if err != nil {
		return fmt.Errorf("installing: %w", err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return fmt.Errorf("installing: %w", err)
	}
	out, err := os.CreateTemp(filepath.Dir(dest), ".install-*")
	if err != nil {
		return fmt.Errorf("installing: %w", err)
	}
	_, cerr := io.Copy(out, in)
	err = errors.Join(cerr, out.Chmod(0o755), out.Close())
	if err == nil {
		err = os.Rename(out.Name(), dest)
	}
	if err != nil {
		os.Remove(out.Name())
		return fmt.Errorf("installing to %s: %w", dest, err)
	}
	return nil
}
