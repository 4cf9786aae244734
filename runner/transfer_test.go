package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/concourse-tekton/concourse-tekton/internal/tarstream"
	"github.com/concourse-tekton/concourse-tekton/runner/state"
)

// TestReceiveThenSend uploads a tree into a one-off build's volume through the command
// line, finds it registered in the root scope, and downloads it again.
func TestReceiveThenSend(t *testing.T) {
	src, volume := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "sub", "f"), []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	var upload bytes.Buffer
	if err := tarstream.Write(&upload, src, nil); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	args := []string{"receive", "--volume=" + volume, "--dir=volumes/2/src", "--name=src"}
	if code := run(context.Background(), args, &upload, &stdout, &stderr); code != 0 {
		t.Fatalf("receive exited %d: %s", code, stderr.String())
	}
	if got, _ := os.ReadFile(filepath.Join(volume, "volumes", "2", "src", "sub", "f")); string(got) != "hello" {
		t.Errorf("uploaded file = %q", got)
	}
	if rel, found, err := state.New(volume).Artifact([]string{"a/0"}, "src"); err != nil || !found || rel != "volumes/2/src" {
		t.Errorf("artifact src = %q, %t, %v; want volumes/2/src registered in the root scope", rel, found, err)
	}

	stdout.Reset()
	if code := run(context.Background(), []string{"send", "--volume=" + volume, "--name=src"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("send exited %d: %s", code, stderr.String())
	}
	dst := t.TempDir()
	if err := tarstream.Extract(&stdout, dst); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dst, "sub", "f"))
	if got, _ := os.ReadFile(filepath.Join(dst, "sub", "f")); err != nil || string(got) != "hello" || info.Mode().Perm() != 0o600 {
		t.Errorf("downloaded file = %q (%v, %v)", got, info, err)
	}
}

func TestTransferRefusals(t *testing.T) {
	volume := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a directory outside volumes/", []string{"receive", "--dir=state/scopes", "--name=x"}, "a --dir under volumes/"},
		{"a directory that climbs", []string{"receive", "--dir=volumes/../state", "--name=x"}, "a --dir under volumes/"},
		{"no name", []string{"receive", "--dir=volumes/1/x"}, "needs --name"},
		{"an artifact the build does not have", []string{"send", "--name=nope"}, `the build has no artifact "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append(tt.args, "--volume="+volume)
			if code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr.String(), tt.want)
			}
		})
	}
}

func TestHoldEndsWhenStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() { done <- run(ctx, []string{"hold", "--timeout=1m"}, nil, nil, nil) }()
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("hold exited %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("hold did not end when stopped")
	}
	if code := run(context.Background(), []string{"hold", "--timeout=10ms"}, nil, nil, nil); code != 0 {
		t.Errorf("hold exited %d after its timeout", code)
	}
}
