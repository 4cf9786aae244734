package resourcetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// RunAsEnv, set to 1, makes a test binary act as the script it is linked as; its
// TestMain checks it with ActingAsScript.
const RunAsEnv = "RESOURCE_TEST_RUN_AS_SCRIPT"

// ActingAsScript reports whether this process is a script started by Run, and which.
func ActingAsScript() (string, bool) {
	return filepath.Base(os.Args[0]), os.Getenv(RunAsEnv) == "1"
}

// Scripts links the test binary as check, in and out in a fresh directory.
func Scripts(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, s := range []string{"check", "in", "out"} {
		if err := os.Symlink(self, filepath.Join(dir, s)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Result is what a script printed and how it exited.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Run runs script from bin with request on stdin, env added to a minimal environment,
// and args.
func Run(t *testing.T, bin, script, request string, env []string, args ...string) Result {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, script), args...)
	cmd.Env = append([]string{RunAsEnv + "=1", "PATH=" + os.Getenv("PATH")}, env...)
	cmd.Stdin = strings.NewReader(request)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s: %v", script, err)
	}
	return Result{out.String(), errb.String(), code}
}

// Succeeded checks the exit code and stderr, and tells whether there is a reply to read.
func (r Result) Succeeded(t *testing.T, wantCode int, wantStderr string) bool {
	t.Helper()
	if r.Code != wantCode {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", r.Code, wantCode, r.Stderr)
	}
	if !strings.Contains(r.Stderr, wantStderr) {
		t.Errorf("stderr %q does not contain %q", r.Stderr, wantStderr)
	}
	return wantCode == 0
}

// Decode decodes the script's stdout into into.
func (r Result) Decode(t *testing.T, into any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.Stdout), into); err != nil {
		t.Fatalf("stdout %q: %v", r.Stdout, err)
	}
}
