package tarstream

import (
	"archive/tar"
	"bytes"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tree lists a directory: path → "dir", "link -> target" or the file's mode and content.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case rel == ".":
		case d.IsDir():
			out[rel] = "dir " + info.Mode().Perm().String()
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link -> " + target
		default:
			data, _ := os.ReadFile(p)
			out[rel] = info.Mode().Perm().String() + " " + string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := fs.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	src := t.TempDir()
	write(t, src, map[string]string{"a.txt": "a", "bin/run.sh": "#!/bin/sh", "deep/er/x": "x", "ignored/y": "y"})
	if err := os.Symlink("../a.txt", filepath.Join(src, "bin", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(src, "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		files []string
		want  map[string]string
	}{
		{"everything", nil, map[string]string{
			"a.txt": "-rw-r--r-- a", "bin": "dir -rwxr-xr-x", "bin/run.sh": "-rwxr-xr-x #!/bin/sh", "bin/link": "link -> ../a.txt",
			"deep": "dir -rwxr-xr-x", "deep/er": "dir -rwxr-xr-x", "deep/er/x": "-rw-r--r-- x", "empty": "dir -rwx------",
			"ignored": "dir -rwxr-xr-x", "ignored/y": "-rw-r--r-- y",
		}},
		{"a list, with the directories leading to it, and a file deleted since", []string{"deep/er/x", "bin", "gone"}, map[string]string{
			"bin": "dir -rwxr-xr-x", "bin/run.sh": "-rwxr-xr-x #!/bin/sh", "bin/link": "link -> ../a.txt",
			"deep": "dir -rwxr-xr-x", "deep/er": "dir -rwxr-xr-x", "deep/er/x": "-rw-r--r-- x",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, src, tt.files); err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(t.TempDir(), "out")
			if err := Extract(bytes.NewReader(buf.Bytes()), dst); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, tree(t, dst)); diff != "" {
				t.Errorf("extracted tree (-want +got):\n%s", diff)
			}
			var again bytes.Buffer
			if err := Write(&again, src, tt.files); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), again.Bytes()) {
				t.Errorf("the same tree gave different bytes")
			}
		})
	}
}

func TestWriteCarriesNoOwner(t *testing.T) {
	src := t.TempDir()
	write(t, src, map[string]string{"f": "x"})
	var buf bytes.Buffer
	if err := Write(&buf, src, nil); err != nil {
		t.Fatal(err)
	}
	hdr, err := tar.NewReader(&buf).Next()
	if err != nil {
		t.Fatal(err)
	}
	if hdr.Uid != 0 || hdr.Gid != 0 || hdr.Uname != "" || hdr.Gname != "" {
		t.Errorf("header carries an owner: %d:%d %q:%q", hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname)
	}
}

// TestWriteLeavesOutSpecialFiles: a socket or a pipe in the tree (a task's leftover
// agent socket) is left out of the stream, the rest written.
func TestWriteLeavesOutSpecialFiles(t *testing.T) {
	src := t.TempDir()
	write(t, src, map[string]string{"f": "x"})
	if err := syscall.Mkfifo(filepath.Join(src, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(src, "agent.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var buf bytes.Buffer
	if err := Write(&buf, src, nil); err != nil {
		t.Fatal(err)
	}
	var names []string
	for r := tar.NewReader(&buf); ; {
		hdr, err := r.Next()
		if err != nil {
			break
		}
		names = append(names, hdr.Name)
	}
	if diff := cmp.Diff([]string{"f"}, names); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

// archive makes a tar stream of headers (and contents for regular files).
func archive(t *testing.T, entries ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		content := ""
		if h.Typeflag == tar.TypeReg {
			content = "pwned"
			h.Size = int64(len(content))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestExtractStaysInside(t *testing.T) {
	tests := []struct {
		name    string
		entries []*tar.Header
		want    string
	}{
		{"a name that climbs out", []*tar.Header{{Name: "../escaped", Typeflag: tar.TypeReg}}, "outside the directory"},
		{"an absolute name", []*tar.Header{{Name: "/escaped", Typeflag: tar.TypeReg}}, "outside the directory"},
		{"a file written through a link that leads out", []*tar.Header{
			{Name: "l", Typeflag: tar.TypeSymlink, Linkname: ".."},
			{Name: "l/escaped", Typeflag: tar.TypeReg},
		}, "escape"},
		{"a hard link to a file outside", []*tar.Header{{Name: "h", Typeflag: tar.TypeLink, Linkname: "../secret"}}, "outside the directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			write(t, parent, map[string]string{"secret": "s"})
			dst := filepath.Join(parent, "out")
			err := Extract(bytes.NewReader(archive(t, tt.entries...)), dst)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to say %q", err, tt.want)
			}
			if _, err := os.Stat(filepath.Join(parent, "escaped")); err == nil {
				t.Errorf("a file was written outside the directory")
			}
		})
	}
}

// A link at an entry's name, made by an earlier entry or in the directory unpacked into
// (execute -o into a directory that is there), is replaced, not written through: the
// file it leads to, or shares its content with, which may be anywhere, keeps it.
func TestExtractReplacesALinkRatherThanWritingThroughIt(t *testing.T) {
	tests := []struct {
		name    string
		entries []*tar.Header
		there   func(target, f string) error // makes f, in the directory, before
	}{
		{name: "a symbolic link of the archive", entries: []*tar.Header{{Name: "f", Typeflag: tar.TypeSymlink, Linkname: "../target"}}},
		{name: "a symbolic link in the directory", there: func(target, f string) error { return os.Symlink(target, f) }},
		{name: "a hard link in the directory", there: os.Link},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			write(t, parent, map[string]string{"target": "keep"})
			dst := filepath.Join(parent, "out")
			if err := os.Mkdir(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.there != nil {
				if err := tc.there(filepath.Join(parent, "target"), filepath.Join(dst, "f")); err != nil {
					t.Fatal(err)
				}
			}
			data := archive(t, append(tc.entries, &tar.Header{Name: "f", Typeflag: tar.TypeReg})...)
			if err := Extract(bytes.NewReader(data), dst); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(filepath.Join(parent, "target")); string(got) != "keep" {
				t.Errorf("the file outside was written through the link: %q", got)
			}
			if got, _ := os.ReadFile(filepath.Join(dst, "f")); string(got) != "pwned" {
				t.Errorf("f = %q, want the archive's content", got)
			}
		})
	}
}

// ExtractOwned keeps each entry's owner and the setuid, setgid and sticky bits, which
// Extract drops.
func TestExtractOwnedKeepsOwnersAndSpecialBits(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving files owners wants root")
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777, Uid: 0, Gid: 0},
		{Name: "tmp/tool", Typeflag: tar.TypeReg, Mode: 0o4755, Uid: 1234, Gid: 5678, Size: 2},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write([]byte("#!")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	for _, owned := range []bool{false, true} {
		dir := t.TempDir()
		extract := Extract
		if owned {
			extract = ExtractOwned
		}
		if err := extract(bytes.NewReader(buf.Bytes()), dir); err != nil {
			t.Fatal(err)
		}
		dirInfo, err1 := os.Stat(filepath.Join(dir, "tmp"))
		tool, err2 := os.Stat(filepath.Join(dir, "tmp", "tool"))
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		st := tool.Sys().(*syscall.Stat_t)
		kept := tool.Mode()&fs.ModeSetuid != 0 && dirInfo.Mode()&fs.ModeSticky != 0 && st.Uid == 1234 && st.Gid == 5678
		dropped := tool.Mode()&fs.ModeSetuid == 0 && dirInfo.Mode()&fs.ModeSticky == 0 && st.Uid == 0
		if owned && !kept || !owned && !dropped {
			t.Errorf("owned %v: tool %v uid %d gid %d, tmp %v", owned, tool.Mode(), st.Uid, st.Gid, dirInfo.Mode())
		}
	}
}
