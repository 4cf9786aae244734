//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	tekton "github.com/tektoncd/pipeline/pkg/client/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/atc/e2e/internal/e2eenv"
)

// Images the builds run; the main module's e2e cluster has them loaded.
var (
	busyboxImage = e2eenv.BusyboxImage
	runnerImage  = e2eenv.RunnerImage
	mockImage    = e2eenv.MockImage
	probeImage   = e2eenv.ProbeImage
)

// web is the web node the tests drive, and the fly that drives it.
var web *webNode

type webNode struct {
	kube   kubernetes.Interface
	tekton tekton.Interface
	// ns is the namespace its builds run in; tagged, a further target's, whose worker
	// has the tag taggedTag (--tekton-targets); team, a third's, whose worker is team
	// workerTeam's; otherTeam, a fourth's, team otherTeam's; small, a fifth's, tagged
	// smallTag, whose builds' volumes are file systems of smallVolume (a disk that
	// fills: TestFaultVolumeFull).
	ns, tagged, team, otherTeam, small string
	// env is web.sh's environment: its state, ports and --tekton-* flags, and a home of
	// its own, so that fly's targets (~/.flyrc) are the test's.
	env   []string
	state string
	url   string
	fly   string
}

const flyTarget = "e2e"

// taggedTag is the tag of the web node's second target's worker.
const taggedTag = "e2e-tagged"

// workerTeam is the team whose worker the web node's third target is, and otherTeam the
// fourth's (made by TestTeams: until then, the workers are not saved).
const (
	workerTeam = "e2e-team"
	otherTeam  = "e2e-teamb"
)

// smallTag is the tag of the web node's fifth target, whose build volumes are small
// file systems of their own (the e2e cluster's StorageClass labcsi-sized), of smallVolume.
const (
	smallTag    = "e2e-small-disk"
	smallVolume = "32Mi"
)

// teamAccount is the ServiceAccount of workerTeam's namespace that the team's tasks run
// as (--tekton-team-service-account), with its token projected into each task's pod.
const teamAccount = "prober"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	w, stop, err := start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		if stop != nil {
			stop()
		}
		return 2
	}
	web = w
	// Interrupted (Ctrl-C, or the harness stopping the tests), the web node, its
	// Postgres and the namespaces go as they do at the end; a closed output must not
	// stop that half-way.
	var once sync.Once
	stopOnce := func() { once.Do(stop) }
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-signals
		signal.Ignore(syscall.SIGPIPE)
		fmt.Fprintf(os.Stderr, "%v: stopping the web node\n", sig)
		stopOnce()
		os.Exit(130)
	}()
	code := m.Run()
	signal.Stop(signals)
	stopOnce()
	return code
}

// start makes a namespace and starts the web node with web.sh; stop undoes both.
func start() (w *webNode, stop func(), err error) {
	path := e2eenv.Kubeconfig()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, nil, fmt.Errorf("loading kubeconfig %s (start the cluster with `make e2e-up` in the repository's root, or set E2E_KUBECONFIG): %w", path, err)
	}
	w = &webNode{kube: kubernetes.NewForConfigOrDie(cfg), tekton: tekton.NewForConfigOrDie(cfg)}
	node := w // what undo works on, when start fails (w is then nil)
	var undo []func()
	stop = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}

	ctx := context.Background()
	w.ns = "atc-e2e-" + rand.String(5)
	w.tagged = w.ns + "-tagged"
	w.team = w.ns + "-team"
	w.otherTeam = w.ns + "-teamb"
	w.small = w.ns + "-small"
	for _, ns := range []string{w.ns, w.tagged, w.team, w.otherTeam, w.small} {
		labels := map[string]string{}
		if ns == w.tagged || ns == w.otherTeam {
			// Pod Security baseline, as the chart's builds' namespaces: no privileged step
			// runs there (TestPrivilegedRefused, TestTeams).
			labels["pod-security.kubernetes.io/enforce"] = "baseline"
		}
		if _, err := w.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			return nil, stop, fmt.Errorf("creating namespace %s: %w", ns, err)
		}
		undo = append(undo, func() {
			if os.Getenv("E2E_KEEP_NAMESPACES") == "1" {
				fmt.Fprintf(os.Stderr, "keeping namespace %s (E2E_KEEP_NAMESPACES=1)\n", ns)
				return
			}
			if err := node.kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil {
				fmt.Fprintf(os.Stderr, "deleting namespace %s: %v\n", ns, err)
			}
		})
		// Pods need the namespace's default service account, which a controller adds.
		if err := pollErr(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			_, err := w.kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, client(err)
		}); err != nil {
			return nil, stop, fmt.Errorf("waiting for the default service account of %s: %w", ns, err)
		}
	}
	if _, err := w.kube.CoreV1().ServiceAccounts(w.team).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: teamAccount}}, metav1.CreateOptions{}); err != nil {
		return nil, stop, fmt.Errorf("creating service account %s/%s: %w", w.team, teamAccount, err)
	}

	tmp, err := os.MkdirTemp("", "atc-e2e-")
	if err != nil {
		return nil, stop, err
	}
	undo = append(undo, func() { os.RemoveAll(tmp) })
	w.state = filepath.Join(tmp, "web")
	targets := filepath.Join(tmp, "targets.yml")
	if err := os.WriteFile(targets, []byte(fmt.Sprintf("- namespace: %s\n  kubeconfig: %s\n  tags: [%s]\n- namespace: %s\n  kubeconfig: %s\n  team: %s\n- namespace: %s\n  kubeconfig: %s\n  team: %s\n"+
		"- namespace: %s\n  kubeconfig: %s\n  tags: [%s]\n  storage_class: labcsi-sized\n  build_volume_size: %s\n",
		w.tagged, path, taggedTag, w.team, path, workerTeam, w.otherTeam, path, otherTeam, w.small, path, smallTag, smallVolume)), 0o600); err != nil {
		return nil, stop, err
	}
	home := filepath.Join(tmp, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, stop, err
	}
	webPort, pgPort, err := freePorts()
	if err != nil {
		return nil, stop, err
	}
	w.url = "http://127.0.0.1:" + strconv.Itoa(webPort)
	goEnv, err := goEnvironment()
	if err != nil {
		return nil, stop, err
	}
	atcCache := e2eenv.ATCCache()
	w.fly = filepath.Join(atcCache, "bin", "fly")
	w.env = append(os.Environ(), goEnv...)
	w.env = append(w.env,
		"HOME="+home,
		"XDG_CACHE_HOME="+e2eenv.CacheDir(),
		"CONCOURSE_TEKTON_ATC_CACHE="+atcCache,
		"CONCOURSE_TEKTON_WEB_STATE="+w.state,
		"CONCOURSE_TEKTON_WEB_PORT="+strconv.Itoa(webPort),
		"CONCOURSE_TEKTON_PG_PORT="+strconv.Itoa(pgPort),
		"CONCOURSE_TEKTON_FLY_TARGET="+flyTarget,
		"CONCOURSE_TEKTON_KUBECONFIG="+path,
		"CONCOURSE_TEKTON_NAMESPACE="+w.ns,
		"CONCOURSE_TEKTON_TARGETS="+targets,
		"CONCOURSE_TEKTON_RUNNER_IMAGE="+runnerImage,
		"CONCOURSE_TEKTON_RESOURCE_IMAGE=mock="+mockImage,
		"CONCOURSE_TEKTON_IMAGE_REGISTRY="+os.Getenv("E2E_IMAGE_REGISTRY"),
		"CONCOURSE_TEKTON_HEARTBEAT_INTERVAL=5s",
		// A cloud identity for one team's tasks (TestTeams).
		"CONCOURSE_TEKTON_TEAM_SERVICE_ACCOUNT="+workerTeam+"="+teamAccount,
		// Credentials (TestCredentials): a credential manager, as a Concourse deployment
		// may have one (build logs redact them, as Concourse 8 always does).
		"CONCOURSE_DUMMY_CREDS_VAR=global_secret="+globalSecret,
	)
	undo = append(undo, func() {
		if out, err := node.webSh("down"); err != nil {
			fmt.Fprintf(os.Stderr, "web.sh down: %v\n%s", err, out)
		}
	})
	if out, err := w.webSh("up"); err != nil {
		return nil, stop, fmt.Errorf("web.sh up: %w\n%s%s", err, out, w.logTail(40))
	}
	// The web node answers before its workers are saved, and until they are, a check
	// finds no base resource type, as on a Concourse whose workers are still joining.
	if err := w.waitForWorkers(2*time.Minute, "tekton-"+w.ns, "tekton-"+w.tagged); err != nil {
		return nil, stop, fmt.Errorf("%w\n%s", err, w.logTail(40))
	}
	return w, stop, nil
}

// waitForWorkers waits until fly workers lists the workers named, running.
func (w *webNode) waitForWorkers(timeout time.Duration, names ...string) error {
	var last string
	err := pollErr(context.Background(), timeout, func(ctx context.Context) (bool, error) {
		cmd := exec.CommandContext(ctx, w.fly, "-t", flyTarget, "workers", "--json")
		cmd.Env = w.env
		out, err := cmd.CombinedOutput()
		last = string(out)
		var workers []worker
		if err != nil || json.Unmarshal(out, &workers) != nil {
			return false, nil
		}
		running := 0
		for _, wk := range workers {
			if slices.Contains(names, wk.Name) && wk.State == "running" {
				running++
			}
		}
		return running == len(names), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for workers %s to run: %w; fly workers --json:\n%s", strings.Join(names, ", "), err, last)
	}
	return nil
}

// webSh runs web.sh with the web node's environment.
func (w *webNode) webSh(args ...string) (string, error) {
	cmd := exec.Command("../web.sh", args...)
	cmd.Env = w.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// goEnvironment pins the go command's settings and caches, which come from the home
// directory that web.sh's environment replaces.
func goEnvironment() ([]string, error) {
	out, err := exec.Command("go", "env", "-json", "GOENV", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	var vars map[string]string
	if err := json.Unmarshal(out, &vars); err != nil {
		return nil, err
	}
	var env []string
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env, nil
}

// freePorts finds a port for the web node whose next one (its debug server's) is free
// too, and one for Postgres.
func freePorts() (web, pg int, err error) {
	free := func(port int) bool {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			return false
		}
		l.Close()
		return true
	}
	any := func() (int, error) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port, nil
	}
	for range 20 {
		if web, err = any(); err != nil {
			return 0, 0, err
		}
		if web < 65535 && free(web+1) {
			break
		}
	}
	for {
		if pg, err = any(); err != nil || pg != web && pg != web+1 {
			return web, pg, err
		}
	}
}

// logText is the web node's log so far.
func (w *webNode) logText() string {
	data, err := os.ReadFile(filepath.Join(w.state, "web.log"))
	if err != nil {
		return ""
	}
	return string(data)
}

// logTail is the end of the web node's log, for failures.
func (w *webNode) logTail(lines int) string {
	data := w.logText()
	if data == "" {
		return ""
	}
	all := strings.Split(strings.TrimRight(data, "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return "web.log:\n" + strings.Join(all, "\n") + "\n"
}

// dumpOnFailure logs, when t fails, the end of the web node's log, the runs of the
// namespace that did not succeed and the pods that did not, and then once more what the
// test (and its subtests) said when it failed: a CI log shows the lines just before a
// test's --- FAIL, and the failure itself would be far above them, behind the dump.
func dumpOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background()
		t.Log(web.logTail(60))
		if prs, err := web.tekton.TektonV1().PipelineRuns(web.ns).List(ctx, metav1.ListOptions{}); err == nil {
			for _, pr := range prs.Items {
				if c := pr.Status.GetCondition(apis.ConditionSucceeded); !c.IsTrue() {
					t.Logf("PipelineRun %s: %+v", pr.Name, c)
				}
			}
		}
		if pods, err := web.kube.CoreV1().Pods(web.ns).List(ctx, metav1.ListOptions{}); err == nil {
			for _, p := range pods.Items {
				if p.Status.Phase != corev1.PodSucceeded {
					t.Logf("pod %s: %s", p.Name, p.Status.Phase)
				}
			}
		}
		t.Logf("%s failed:\n%s", t.Name(), strings.Join(failuresOf(t.Name()), "\n"))
	})
}

// failures are what each test (by name) said when it failed, for dumpOnFailure.
var failures struct {
	sync.Mutex
	said map[string][]string
}

// failed notes what the test t says as it fails.
func failed(t *testing.T, msg string) {
	failures.Lock()
	defer failures.Unlock()
	if failures.said == nil {
		failures.said = map[string][]string{}
	}
	failures.said[t.Name()] = append(failures.said[t.Name()], msg)
}

// failuresOf is what the test named name and its subtests said when they failed, in
// the order of their names.
func failuresOf(name string) []string {
	failures.Lock()
	defer failures.Unlock()
	var names, out []string
	for n := range failures.said {
		if n == name || strings.HasPrefix(n, name+"/") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		for _, msg := range failures.said[n] {
			out = append(out, n+": "+msg)
		}
	}
	return out
}

// errorf is t.Errorf, noted for dumpOnFailure.
func errorf(t *testing.T, format string, args ...any) {
	t.Helper()
	failed(t, fmt.Sprintf(format, args...))
	t.Errorf(format, args...)
}

// fatalf is t.Fatalf, noted for dumpOnFailure.
func fatalf(t *testing.T, format string, args ...any) {
	t.Helper()
	failed(t, fmt.Sprintf(format, args...))
	t.Fatalf(format, args...)
}

// fatal is t.Fatal, noted for dumpOnFailure.
func fatal(t *testing.T, args ...any) {
	t.Helper()
	failed(t, strings.TrimSuffix(fmt.Sprintln(args...), "\n"))
	t.Fatal(args...)
}

// fly runs fly as a user does, and returns what it printed (stdout and stderr) and its
// exit status.
func fly(t *testing.T, timeout time.Duration, args ...string) (string, int) {
	t.Helper()
	return flyAs(t, flyTarget, timeout, args...)
}

// flyAs is fly with another of fly's targets (a team's: TestTeams).
func flyAs(t *testing.T, target string, timeout time.Duration, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return launchFly(t, ctx, target, false, args).wait(t)
}

// flyProcess is a fly command running in the background.
type flyProcess struct {
	cmd *exec.Cmd
	// stdin is a pipe to its stdin, when it was started with one (startFlyIn).
	stdin io.WriteCloser
	mu    sync.Mutex
	out   bytes.Buffer
	done  chan struct{}
	err   error
}

func (p *flyProcess) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

// output is what it printed so far.
func (p *flyProcess) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func startFly(t *testing.T, ctx context.Context, args ...string) *flyProcess {
	t.Helper()
	return launchFly(t, ctx, flyTarget, false, args)
}

// startFlyIn starts fly with a pipe to its stdin.
func startFlyIn(t *testing.T, ctx context.Context, args ...string) *flyProcess {
	t.Helper()
	return launchFly(t, ctx, flyTarget, true, args)
}

func launchFly(t *testing.T, ctx context.Context, target string, stdin bool, args []string) *flyProcess {
	t.Helper()
	p := &flyProcess{done: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, web.fly, append([]string{"-t", target}, args...)...)
	p.cmd.Env = web.env
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if stdin {
		pipe, err := p.cmd.StdinPipe()
		if err != nil {
			fatal(t, err)
		}
		p.stdin = pipe
	}
	if err := p.cmd.Start(); err != nil {
		fatalf(t, "fly %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p
}

// wait waits for the command to end and returns its output and exit status.
func (p *flyProcess) wait(t *testing.T) (string, int) {
	t.Helper()
	<-p.done
	var exit *exec.ExitError
	switch {
	case p.err == nil:
		return p.output(), 0
	case errors.As(p.err, &exit):
		// -1: killed, when its context ended.
		return p.output(), exit.ExitCode()
	}
	fatalf(t, "fly %s: %v\n%s", strings.Join(p.cmd.Args[1:], " "), p.err, p.output())
	return "", 0
}

// setPipeline sets and unpauses a pipeline.
func setPipeline(t *testing.T, name, config string) {
	t.Helper()
	setPipelineAs(t, flyTarget, name, config)
}

// setPipelineAs is setPipeline with another of fly's targets.
func setPipelineAs(t *testing.T, target, name, config string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), name+".yml")
	if err := os.WriteFile(file, []byte(config), 0o644); err != nil {
		fatal(t, err)
	}
	for _, args := range [][]string{
		{"set-pipeline", "-n", "-p", name, "-c", file},
		{"unpause-pipeline", "-p", name},
	} {
		if out, code := flyAs(t, target, time.Minute, args...); code != 0 {
			fatalf(t, "fly %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
	}
}

// build is one line of `fly builds --json`.
type build struct {
	ID           int    `json:"id"`
	Name         string `json:"name"`
	Status       string `json:"status"`
	JobName      string `json:"job_name"`
	PipelineName string `json:"pipeline_name"`
}

func builds(t *testing.T, pipeline string) map[string]build {
	t.Helper()
	out, code := fly(t, time.Minute, "builds", "--pipeline", pipeline, "--json")
	if code != 0 {
		fatalf(t, "fly builds: exit %d\n%s", code, out)
	}
	var list []build
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		fatalf(t, "fly builds --json: %v\n%s", err, out)
	}
	byJob := map[string]build{}
	for _, b := range list {
		byJob[b.JobName+"/"+b.Name] = b
	}
	return byJob
}

// eventually polls cond every half second until it holds, or fails t after timeout.
func eventually(t *testing.T, what string, timeout time.Duration, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := pollErr(context.Background(), timeout, cond); err != nil {
		fatalf(t, "waiting for %s: %v", what, err)
	}
}

func pollErr(ctx context.Context, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, err := cond(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not after %s", timeout)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// client is err unless it says the object is not there (yet).
func client(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// busybox is the image_resource of the pipelines' tasks.
func busybox() string {
	return imageResource(busyboxImage)
}

// imageResource is the image_resource of an image reference.
func imageResource(ref string) string {
	repo, tag := ref, "latest"
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		repo, tag = ref[:i], ref[i+1:]
	}
	return fmt.Sprintf(`{type: registry-image, source: {repository: %s, tag: %q}}`, repo, tag)
}

func jsonUnmarshal(s string, v any) error {
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("%w: %s", err, s)
	}
	return nil
}

// flyOK runs fly as a user does, logs what it printed, and fails t unless it exits 0.
func flyOK(t *testing.T, timeout time.Duration, args ...string) string {
	t.Helper()
	out, code := fly(t, timeout, args...)
	t.Logf("fly %s: exit %d\n%s", strings.Join(args, " "), code, out)
	if code != 0 {
		fatalf(t, "exit %d, want 0", code)
	}
	return out
}

// watchBuild waits for a job's build to succeed, failing t if it ends otherwise, and
// returns what fly watch prints of it. It allows 10 minutes: with both e2e suites on
// two cores a pod can take a minute and a half to run, and a build of a get and a task
// waits for Concourse's scheduler besides. Given up, it says how far the build came.
func watchBuild(t *testing.T, pipeline, job, name string) string {
	t.Helper()
	last := "not created"
	err := pollErr(context.Background(), 10*time.Minute, func(context.Context) (bool, error) {
		b, ok := builds(t, pipeline)[job+"/"+name]
		if ok {
			last = b.Status
		}
		if ok && b.Status != "started" && b.Status != "pending" && b.Status != "succeeded" {
			// Its events say why.
			out, code := fly(t, time.Minute, "watch", "-j", pipeline+"/"+job, "-b", name)
			return false, fmt.Errorf("%s #%s %s; fly watch (exit %d):\n%s", job, name, b.Status, code, out)
		}
		return ok && b.Status == "succeeded", nil
	})
	switch {
	case err != nil && last == "not created":
		fatalf(t, "waiting for %s #%s to succeed: %v, and it was never created", job, name, err)
	case err != nil && (last == "started" || last == "pending"):
		out, code := fly(t, time.Minute, "watch", "-j", pipeline+"/"+job, "-b", name)
		fatalf(t, "waiting for %s #%s to succeed: %v (it is %s); fly watch (exit %d):\n%s", job, name, err, last, code, out)
	case err != nil:
		fatalf(t, "waiting for %s #%s to succeed: %v", job, name, err)
	}
	out, code := fly(t, time.Minute, "watch", "-j", pipeline+"/"+job, "-b", name)
	t.Logf("fly watch -j %s/%s -b %s: exit %d\n%s", pipeline, job, name, code, out)
	return out
}

// envInt is the number in the environment variable name, def when it is unset.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		fatalf(t, "%s=%q: want a number above 0", name, v)
	}
	return n
}

// envDuration is the duration in the environment variable name, def when it is unset.
func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		fatalf(t, "%s=%q: want a duration", name, v)
	}
	return d
}
