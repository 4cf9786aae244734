//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/concourse-tekton/concourse-tekton/atc/e2e/internal/e2eenv"
)

// The build header's colours (Concourse's palette): a build that succeeded, one aborted.
const (
	headerGreen = "rgb(28, 189, 99)"
	headerBrown = "rgb(110, 69, 0)"
)

// TestBrowser uses the web UI as a user does, in headless Chromium: it logs in, finds the
// pipeline on the dashboard, opens its graph, pauses and unpauses it, reads a resource's
// versions, triggers a job from the job's page and watches the build page until the build
// has ended, reads its steps' names, states, the task's image check and get and its log
// lines off the page and checks them against fly watch, finds the build in the job's
// builds, then triggers a second build and aborts it from its page. It saves
// screenshots of the pipeline and of the build (E2E_ARTIFACTS, else the atc cache's
// e2e-artifacts) and fails on any error in the browser's console.
func TestBrowser(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	const pipeline = "browser"
	setPipeline(t, pipeline, fmt.Sprintf(`
resources:
- name: thing
  type: mock
  check_every: 1h
  source: {initial_version: shown-in-the-ui}
jobs:
- name: hello
  plan:
  - get: thing
  - task: say
    config:
      platform: linux
      image_resource: %[1]s
      inputs: [{name: thing}]
      run: {path: sh, args: [-c, 'echo hello from tekton; echo version $(cat thing/version)']}
- name: slow
  plan:
  - task: wait
    config:
      platform: linux
      image_resource: %[1]s
      run: {path: sh, args: [-c, 'echo waiting for an abort; sleep 600']}
`, busybox()))
	flyOK(t, 2*time.Minute, "check-resource", "-r", pipeline+"/thing")

	b := openBrowser(t)
	b.login()

	// The dashboard lists the pipeline.
	b.navigate("/")
	b.waitFor("the dashboard's card of the pipeline", time.Minute,
		fmt.Sprintf(`document.querySelector('.card[data-pipeline-name=%q]') !== null`, pipeline))

	// The pipeline's graph shows its jobs and resource.
	b.navigate("/teams/main/pipelines/" + pipeline)
	b.waitFor("the pipeline's graph", time.Minute,
		`['hello', 'slow', 'thing'].every(n => document.querySelector('#pipeline-container').innerText.includes(n))`)
	b.screenshot("pipeline.png")

	// Pause and unpause it from its top bar.
	for _, paused := range []bool{true, false} {
		b.do(time.Minute, chromedp.Click(chromedp.CSS("#top-bar-app .pause-toggle")))
		eventually(t, fmt.Sprintf("the pipeline paused: %t", paused), time.Minute, func(context.Context) (bool, error) {
			out, code := fly(t, time.Minute, "pipelines", "--json")
			if code != 0 {
				return false, fmt.Errorf("fly pipelines: exit %d\n%s", code, out)
			}
			var list []struct {
				Name   string `json:"name"`
				Paused bool   `json:"paused"`
			}
			if err := jsonUnmarshal(out, &list); err != nil {
				return false, err
			}
			for _, p := range list {
				if p.Name == pipeline {
					return p.Paused == paused, nil
				}
			}
			return false, nil
		})
		// The toggle shows again once the UI has the pipeline's new state.
		b.waitFor("the pause toggle", time.Minute, `document.querySelector('#top-bar-app .pause-toggle') !== null`)
	}

	// The resource's page lists the version its check found.
	b.navigate("/teams/main/pipelines/" + pipeline + "/resources/thing")
	b.waitFor("the resource's version", time.Minute,
		`Array.from(document.querySelectorAll('.resource-versions li')).some(li => li.innerText.includes('shown-in-the-ui'))`)

	// Trigger hello from its job page: the UI goes to the new build's page, which shows
	// the build until it ends.
	b.navigate("/teams/main/pipelines/" + pipeline + "/jobs/hello")
	b.do(time.Minute, chromedp.Click(chromedp.CSS(`button[aria-label="Trigger Build"]`)))
	b.waitFor("the build's page", time.Minute, `document.querySelector('[data-build-name="1"]') !== null`)
	b.waitFor("the build to succeed", 10*time.Minute,
		fmt.Sprintf(`document.querySelector('.build-header[style*=%q]') !== null`, headerGreen))
	steps := b.steps()
	want := []pageStep{{Name: "thing", State: "succeeded"}, {Name: "say", State: "succeeded"}}
	if len(steps) != len(want) {
		fatalf(t, "the build's page shows the steps %+v; want %+v", steps, want)
	}
	for i := range want {
		if steps[i].Name != want[i].Name || steps[i].State != want[i].State {
			errorf(t, "step %d on the page: %s %s; want %s %s", i, steps[i].Name, steps[i].State, want[i].Name, want[i].State)
		}
	}
	// The task's image was fetched as on workers, in a check and a get, which the task's
	// initialization toggle unfolds under it.
	b.do(time.Minute, chromedp.Click(chromedp.CSS(`.build-step[data-step-name="say"] > .header [id$="_image"]`)))
	b.waitFor("the image's check and get under the task", time.Minute, `(() => {
		const subs = document.querySelectorAll('.build-step[data-step-name="say"] > .sub-steps .build-step');
		return subs.length === 2 && Array.from(subs).every(s => `+stateOfStepJS+`(s) === 'succeeded');
	})()`)
	logLines := b.stepLog("say", "hello from tekton")
	b.screenshot("build.png")
	watched := watchBuild(t, pipeline, "hello", "1")
	for _, line := range []string{"hello from tekton", "version shown-in-the-ui"} {
		if !strings.Contains(logLines, line) {
			errorf(t, "the build's page does not show %q in the task's log:\n%s", line, logLines)
		}
		if !strings.Contains(watched, line) {
			errorf(t, "fly watch does not show %q:\n%s", line, watched)
		}
	}

	// The job's page lists the build, succeeded.
	b.navigate("/teams/main/pipelines/" + pipeline + "/jobs/hello")
	b.waitFor("the job's builds", time.Minute, `(() => {
		const builds = document.querySelectorAll('.jobs-builds-list > li');
		return builds.length === 1 && builds[0].innerText.includes('#1') && builds[0].querySelector('.succeeded') !== null;
	})()`)

	// Trigger slow, and abort it from its page once its task runs.
	b.navigate("/teams/main/pipelines/" + pipeline + "/jobs/slow")
	b.do(time.Minute, chromedp.Click(chromedp.CSS(`button[aria-label="Trigger Build"]`)))
	b.waitFor("the task running", 10*time.Minute, stepStateJS("wait")+` === 'running'`)
	b.stepLog("wait", "waiting for an abort")
	b.do(time.Minute, chromedp.Click(chromedp.CSS(`button[aria-label="Abort Build"]`)))
	b.waitFor("the build aborted", 5*time.Minute,
		fmt.Sprintf(`document.querySelector('.build-header[style*=%q]') !== null`, headerBrown))
	// As on Concourse's workers, the task whose build is aborted errors with "interrupted".
	b.waitFor("the task errored", time.Minute, stepStateJS("wait")+` === 'errored'`)
	b.stepLog("wait", "interrupted")
	b.screenshot("aborted.png")
	if got := builds(t, pipeline)["slow/1"].Status; got != "aborted" {
		errorf(t, "fly builds says slow #1 is %s; want aborted", got)
	}
	out, _ := fly(t, time.Minute, "watch", "-j", pipeline+"/slow", "-b", "1")
	if !strings.Contains(out, "waiting for an abort") || !strings.Contains(out, "aborted") {
		errorf(t, "fly watch of the aborted build:\n%s", out)
	}

	if errs := b.consoleErrors(); len(errs) > 0 {
		errorf(t, "the browser's console has errors:\n%s", strings.Join(errs, "\n"))
	}
}

// browser is a headless Chromium with one tab, logged in as the web node's user.
type browser struct {
	t   *testing.T
	ctx context.Context
	// artifacts is where screenshots go.
	artifacts string

	mu      sync.Mutex
	console []chromedp.ConsoleMessage
}

// chromium is the browser's binary: E2E_CHROMIUM, else chromium on the PATH.
func chromium(t *testing.T) string {
	if p := os.Getenv("E2E_CHROMIUM"); p != "" {
		return p
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		fatal(t, "no chromium on the PATH (Debian's chromium: make -C atc deps), nor E2E_CHROMIUM")
	}
	return p
}

func openBrowser(t *testing.T) *browser {
	t.Helper()
	artifacts := os.Getenv("E2E_ARTIFACTS")
	if artifacts == "" {
		artifacts = filepath.Join(e2eenv.CacheDir(), "concourse-tekton", "atc", "e2e-artifacts")
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		fatal(t, err)
	}
	// As the machine's network is closed, the browser asks nothing of the internet: no
	// background networking, component updates, sync or QUIC.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.ModifyCmdFunc(inOwnNetwork),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		fatalf(t, "starting %s: %v", chromium(t), err)
	}
	stopRelay, err := relayInto(chromedp.FromContext(ctx).Browser.Process().Pid, web.url)
	if err != nil {
		fatal(t, err)
	}
	t.Cleanup(stopRelay)
	b := &browser{t: t, ctx: ctx, artifacts: artifacts}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, m)
			b.mu.Unlock()
		}
	}()
	return b
}

// do runs actions, failing the test when they fail or take longer than timeout.
func (b *browser) do(timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(fmt.Sprintf("in the browser: %v", err))
	}
}

func (b *browser) navigate(path string) {
	b.t.Helper()
	b.do(time.Minute, chromedp.Navigate(web.url+path))
}

// waitFor waits until the JavaScript expression is true, failing the test after timeout.
func (b *browser) waitFor(what string, timeout time.Duration, expression string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expression,
		chromedp.WithPollingInterval(250*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
	if err != nil {
		b.fail(fmt.Sprintf("waiting for %s in the browser: %v", what, err))
	}
}

// eval is the string the JavaScript expression evaluates to.
func (b *browser) eval(expression string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expression))
	if err != nil {
		b.fail(fmt.Sprintf("evaluating %s in the browser: %v", expression, err))
	}
	return v
}

// login logs in through the login form, as the web node's local user, and waits for
// the dashboard to show the user.
func (b *browser) login() {
	b.t.Helper()
	b.navigate("/sky/login")
	b.do(time.Minute,
		chromedp.WaitVisible(chromedp.ID("login")),
		chromedp.SendKeys(chromedp.ID("login"), "test"),
		chromedp.SendKeys(chromedp.ID("password"), "test"),
		chromedp.Click(chromedp.ID("submit-login")),
		chromedp.WaitVisible(chromedp.ID("user-id")),
	)
	if text := b.eval(`document.querySelector('#user-id').innerText`); !strings.Contains(text, "test") {
		b.fail(fmt.Sprintf("logged in, the top bar shows the user %q; want test", text))
	}
}

// pageStep is a step as the build's page shows it.
type pageStep struct {
	Name  string `json:"name"`
	State string `json:"state"`
}

// stateOfStepJS is a JavaScript function of a step's element (.build-step), the state its
// header shows: a running step shows a spinner, with no data-step-state.
const stateOfStepJS = `(step => {
	const state = step.querySelector(':scope > .header [data-step-state]');
	return state === null ? 'running' : state.dataset.stepState;
})`

// stepStateJS is a JavaScript expression: the state of the step named name (null while
// the page has no such step).
func stepStateJS(name string) string {
	return fmt.Sprintf(`((step => step === null ? null : %s(step))(document.querySelector('.build-step[data-step-name=%q]')))`, stateOfStepJS, name)
}

// stepLog unfolds the step named name (the build's page shows every step folded until
// it is clicked), waits for its log to show want, and returns the log.
func (b *browser) stepLog(name, want string) string {
	b.t.Helper()
	body := fmt.Sprintf(`document.querySelector('.build-step[data-step-name=%q] > .step-body')`, name)
	if b.eval(fmt.Sprintf(`%s === null ? 'folded' : 'unfolded'`, body)) == "folded" {
		b.do(time.Minute, chromedp.Click(chromedp.CSS(fmt.Sprintf(`.build-step[data-step-name=%q] > .header`, name))))
	}
	b.waitFor(fmt.Sprintf("%q in the log of %s", want, name), 5*time.Minute,
		fmt.Sprintf(`%s !== null && %s.innerText.includes(%q)`, body, body, want))
	return b.eval(body + `.innerText`)
}

// steps are the steps the build's page shows, in order, with their states.
func (b *browser) steps() []pageStep {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	steps, err := chromedp.Run(ctx, chromedp.Evaluate[[]pageStep](`Array.from(document.querySelectorAll('.build-step[data-step-name]')).map(e => ({
		name: e.dataset.stepName, state: `+stateOfStepJS+`(e),
	}))`))
	if err != nil {
		b.fail(fmt.Sprintf("reading the build's steps: %v", err))
	}
	return steps
}

// screenshot saves the tab as a PNG in the artifacts directory.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.fail(fmt.Sprintf("taking a screenshot: %v", err))
	}
	path := filepath.Join(b.artifacts, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.fail(err.Error())
	}
	b.t.Logf("screenshot: %s", path)
}

// consoleErrors are the errors and exceptions the console has had. A request the browser
// itself dropped because the machine's network changed (net::ERR_NETWORK_CHANGED: the
// cluster adds and removes a pod's interfaces on this machine as pods come and go) is
// logged, not counted: it says nothing of the page or the web node.
func (b *browser) consoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []string
	for _, m := range b.console {
		if m.Type != chromedp.ConsoleError && !m.IsException() {
			continue
		}
		line := fmt.Sprintf("%s %s:%d: %s", m.Type, m.URL, m.Line+1, m.Text)
		if m.Source == "network" && strings.Contains(m.Text, "net::ERR_NETWORK_CHANGED") {
			b.t.Logf("the network changed under a request (not counted): %s", line)
			continue
		}
		errs = append(errs, line)
	}
	return errs
}

// fail fails the test with what the page showed and its console, and a screenshot of it.
func (b *browser) fail(msg string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
		path := filepath.Join(b.artifacts, "failure-"+strings.ReplaceAll(b.t.Name(), "/", "-")+".png")
		if os.WriteFile(path, png, 0o644) == nil {
			msg += "\nscreenshot: " + path
		}
	}
	if text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`)); err == nil {
		msg += "\nthe page shows:\n" + text
	}
	b.mu.Lock()
	for _, m := range b.console {
		msg += fmt.Sprintf("\nconsole %s: %s", m.Type, m.Text)
	}
	b.mu.Unlock()
	fatal(b.t, msg)
}
