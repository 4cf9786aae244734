package images

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/internal/ociimage"
)

func TestBusyboxFiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		applets []string
		want    []string // symlinks to busybox
	}{
		{"adds sh when missing", []string{"usr/bin/awk"}, []string{"usr/bin/awk", "bin/sh"}},
		{"sorted, deduplicated, busybox itself skipped", []string{"bin/sh", "/bin/ash", "bin/busybox", "bin/sh", ""}, []string{"bin/ash", "bin/sh"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range BusyboxFiles([]byte("bb"), tc.applets) {
				if f.Mode&fs.ModeSymlink != 0 {
					if f.Target != "/bin/busybox" {
						t.Errorf("%s points to %q", f.Path, f.Target)
					}
					got = append(got, f.Path)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("symlinks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestImagesBuild(t *testing.T) {
	for _, img := range []Image{
		Pause("e2e.invalid/pause:1", []byte("p")),
		Busybox("e2e.invalid/busybox:1", []byte("bb"), []string{"bin/sh", "bin/ls"}),
		Tekton("e2e.invalid/tekton/nop:1", "nop", []byte("nop")),
		Resource("e2e.invalid/mock:1", []byte("r"), []byte("bb"), []string{"bin/sh"}),
		Probe("e2e.invalid/probe:1", []byte("probe"), []byte("bb"), []string{"bin/sh"}),
		GitResource("e2e.invalid/git:1", []byte("r"), []byte("bb"), nil, []ociimage.File{
			{Path: "/usr/bin/git", Mode: 0o755, Data: []byte("git")},
			{Path: "/lib/x86_64-linux-gnu/libz.so.1", Mode: 0o644, Data: []byte("z")},
		}),
	} {
		t.Run(img.Ref, func(t *testing.T) {
			if _, err := ociimage.Build(img.Files, img.Config); err != nil {
				t.Errorf("Build: %v", err)
			}
		})
	}
}

func TestResourceScripts(t *testing.T) {
	img := Resource("e2e.invalid/mock:1", []byte("r"), []byte("bb"), nil)
	got := map[string]string{}
	for _, f := range img.Files {
		if len(f.Path) > len("/opt/resource/") && f.Path[:len("/opt/resource/")] == "/opt/resource/" {
			got[f.Path] = f.Target
		}
	}
	want := map[string]string{
		"/opt/resource/resource": "",
		"/opt/resource/check":    "resource",
		"/opt/resource/in":       "resource",
		"/opt/resource/out":      "resource",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("/opt/resource (-want +got):\n%s", diff)
	}
}

// The host's bash replaces the resource image's stand-in, with its libraries; printenv's
// stand-in stays.
func TestResourceHostBash(t *testing.T) {
	img := Resource("e2e.invalid/mock:1", []byte("r"), []byte("bb"), nil,
		ociimage.File{Path: "/bin/bash", Mode: 0o755, Data: []byte("ELF bash")},
		ociimage.File{Path: "/lib/x86_64-linux-gnu/libtinfo.so.6", Mode: 0o755, Data: []byte("tinfo")})
	got := map[string][]string{}
	for _, f := range img.Files {
		got[f.Path] = append(got[f.Path], string(f.Data))
	}
	if b := got["/bin/bash"]; len(b) != 1 || b[0] != "ELF bash" {
		t.Errorf("/bin/bash %q, want the host's only", b)
	}
	if len(got["/lib/x86_64-linux-gnu/libtinfo.so.6"]) != 1 || len(got["/usr/bin/printenv"]) != 1 {
		t.Errorf("files %v; want bash's library and printenv's stand-in", got)
	}
	if _, err := ociimage.Build(img.Files, img.Config); err != nil {
		t.Errorf("Build: %v", err)
	}
}

func TestLddPaths(t *testing.T) {
	const out = `	linux-vdso.so.1 (0x00007f4c2fa68000)
	libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x00007f4c2f5e1000)
	libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f4c2f3ff000)
	/lib64/ld-linux-x86-64.so.2 (0x00007f4c2fa6a000)
	libgone.so.1 => not found
`
	want := []string{"/lib/x86_64-linux-gnu/libz.so.1", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}
	if diff := cmp.Diff(want, LddPaths(out)); diff != "" {
		t.Errorf("LddPaths (-want +got):\n%s", diff)
	}
}

// The resource images' printenv stand-in prints the variables named, one a line, and
// fails for one not set; with no name, the environment.
func TestPrintenvShim(t *testing.T) {
	var script []byte
	for _, f := range shims {
		if f.Path == "/usr/bin/printenv" {
			script = f.Data
		}
	}
	path := filepath.Join(t.TempDir(), "printenv")
	if err := os.WriteFile(path, script, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command("sh", append([]string{path}, args...)...)
		cmd.Env = []string{"FOO=a b $x", "EMPTY="}
		out, err := cmd.Output()
		return string(out), err
	}
	if out, err := run("FOO", "EMPTY"); err != nil || out != "a b $x\n\n" {
		t.Errorf("printenv FOO EMPTY = %q, %v; want the values, one a line", out, err)
	}
	if _, err := run("NOPE"); err == nil {
		t.Error("printenv NOPE succeeded, want it to fail")
	}
	if out, err := run(); err != nil || !strings.Contains(out, "FOO=a b $x") {
		t.Errorf("printenv = %q, %v; want the environment", out, err)
	}
}
