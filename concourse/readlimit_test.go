package concourse_test

import (
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/concourse-tekton/concourse-tekton/concourse"
)

// endless is a file that never ends, as /dev/zero: a reader that takes more than
// giveUp of it fails the test instead of running out of memory.
type endless struct{ read int }

const giveUp = 64 << 20

func (e *endless) Read(p []byte) (int, error) {
	if e.read > giveUp {
		return 0, errors.New("64 MiB read of a file that never ends: it is read whole")
	}
	clear(p)
	e.read += len(p)
	return len(p), nil
}

// endlessFS has an endless file at every path, and keeps them.
type endlessFS struct{ opened *[]*endless }

func (f endlessFS) Open(name string) (fs.File, error) {
	e := &endless{}
	*f.opened = append(*f.opened, e)
	return endlessFile{e}, nil
}

type endlessFile struct{ *endless }

func (endlessFile) Stat() (fs.FileInfo, error) {
	return fstest.MapFS{"f": {ModTime: time.Time{}}}.Stat("f")
}
func (endlessFile) Close() error { return nil }

// TestReadConfigLimit: a pipeline, task or vars file is read no further than the
// loader's limit, whatever its size.
func TestReadConfigLimit(t *testing.T) {
	const want = "/dev/zero:1:4194305: the file is over the loader's limit of 4 MiB for a file (reached here): it is read no further"
	var e endless
	_, err := concourse.ReadConfig("/dev/zero", &e)
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
	if e.read > 8<<20 {
		t.Errorf("%d MiB read, want no more than the limit and a buffer", e.read>>20)
	}
	data, err := concourse.ReadConfig("p.yml", strings.NewReader(strings.Repeat("#", 4<<20)))
	if err != nil || len(data) != 4<<20 {
		t.Errorf("a file of the limit's size: %d bytes, %v", len(data), err)
	}
	if _, err := concourse.ReadConfig("p.yml", io.MultiReader(strings.NewReader("jobs: []\n"), errReader{})); err == nil || !strings.Contains(err.Error(), "p.yml: broken") {
		t.Errorf("a read error: %v", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("broken") }

// TestLoadTaskFilesLimit: a task file of an artifact that never ends is refused at the
// step that names it.
func TestLoadTaskFilesLimit(t *testing.T) {
	p, diags := concourse.ParsePipeline("pipeline.yml", []byte(taskFilesPipeline), nil)
	mustNil(t, diags.Err())
	var opened []*endless
	_, loaded := p.LoadTaskFiles(map[string]fs.FS{"repo": endlessFS{&opened}})
	err := loaded.Err()
	if err == nil || !strings.Contains(err.Error(), `pipeline.yml:10:5: jobs[unit].plan[1].file: task "test": reading repo/ci/test.yml: ci/test.yml:1:4194305: the file is over the loader's limit of 4 MiB`) {
		t.Errorf("err = %v", err)
	}
	for _, e := range opened {
		if e.read > 8<<20 {
			t.Errorf("%d MiB read, want no more than the limit and a buffer", e.read>>20)
		}
	}
}
