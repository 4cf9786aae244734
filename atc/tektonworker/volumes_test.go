package tektonworker

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"testing"

	"code.cloudfoundry.org/lager/v3/lagerctx"
	"code.cloudfoundry.org/lager/v3/lagertest"
	"github.com/concourse/concourse/worker/baggageclaim"
	bclient "github.com/concourse/concourse/worker/baggageclaim/client"
)

// serveVolumes serves volumes in a fresh directory, and returns them and a baggageclaim
// client of them, as the ATC makes one for a worker.
func serveVolumes(t *testing.T) (*Volumes, baggageclaim.Client) {
	t.Helper()
	v, err := OpenVolumes(lagertest.NewTestLogger("volumes"), t.TempDir()+"/volumes/tekton-ci")
	if err != nil {
		t.Fatal(err)
	}
	return v, serve(t, v)
}

// serve serves v's baggageclaim API until the test ends, and returns a client of it.
func serve(t testing.TB, v *Volumes) baggageclaim.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- v.Serve(ctx, l, lagertest.NewTestLogger("baggageclaim")) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return bclient.New("http://"+l.Addr().String(), http.DefaultTransport)
}

func tarOf(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := w.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(files[name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func filesOf(t *testing.T, r io.Reader) map[string]string {
	t.Helper()
	files := map[string]string{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			content, _ := io.ReadAll(tr)
			files[h.Name] = string(content)
		}
	}
}

// TestVolumes: the worker's baggageclaim makes, fills, reads, lists and destroys
// volumes as a worker's does, through Concourse's own client, as the ATC does for fly
// execute's uploads and downloads; the volumes outlive the server.
func TestVolumes(t *testing.T) {
	v, bc := serveVolumes(t)
	ctx := lagerctx.NewContext(context.Background(), lagertest.NewTestLogger("test"))

	vol, err := bc.CreateVolume(ctx, "upload-1", baggageclaim.VolumeSpec{Strategy: baggageclaim.EmptyStrategy{}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"./README": "hello\n", "./src/main.go": "package main\n"}
	if err := vol.StreamIn(ctx, ".", baggageclaim.RawEncoding, 0, bytes.NewReader(tarOf(t, map[string]string{"README": "hello\n", "src/main.go": "package main\n"}))); err != nil {
		t.Fatal(err)
	}
	for _, enc := range []baggageclaim.Encoding{baggageclaim.RawEncoding, baggageclaim.GzipEncoding} {
		out, err := vol.StreamOut(ctx, ".", enc)
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = out
		if enc == baggageclaim.GzipEncoding {
			if r, err = gzipReader(out); err != nil {
				t.Fatal(err)
			}
		}
		got := filesOf(t, r)
		out.Close()
		if !maps.Equal(got, want) {
			t.Errorf("%s stream out: %v; want %v", enc, got, want)
		}
	}
	if _, err := bc.CreateVolume(ctx, "upload-2", baggageclaim.VolumeSpec{Strategy: baggageclaim.EmptyStrategy{}}); err != nil {
		t.Fatal(err)
	}
	handles, err := v.VolumeHandles(ctx)
	if slices.Sort(handles); err != nil || !slices.Equal(handles, []string{"upload-1", "upload-2"}) {
		t.Fatalf("handles %v, %v; want upload-1 and upload-2", handles, err)
	}

	// Destroying one that is there and one that is not.
	if err := v.DestroyVolumes(ctx, []string{"upload-1", "gone"}); err != nil {
		t.Fatal(err)
	}
	if _, found, err := bc.LookupVolume(ctx, "upload-1"); found || err != nil {
		t.Errorf("upload-1 found (%v, %v) once destroyed", found, err)
	}

	// Opened again (the web node restarted), the volumes are there.
	again, err := OpenVolumes(lagertest.NewTestLogger("volumes"), v.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if handles, err := again.VolumeHandles(ctx); err != nil || !slices.Equal(handles, []string{"upload-2"}) {
		t.Errorf("after a restart: %v, %v; want upload-2", handles, err)
	}
}

// volumeRecords keeps what the reporter told it.
type volumeRecords struct {
	destroying       []string
	unknown, missing [][]string
	removed          [][]string
	err              error
}

func (r *volumeRecords) GetDestroyingVolumes(string) ([]string, error) { return r.destroying, r.err }
func (r *volumeRecords) DestroyUnknownVolumes(_ string, handles []string) (int, error) {
	r.unknown = append(r.unknown, handles)
	return 0, nil
}
func (r *volumeRecords) UpdateVolumesMissingSince(_ string, handles []string) error {
	r.missing = append(r.missing, handles)
	return nil
}
func (r *volumeRecords) RemoveDestroyingVolumes(_ string, handles []string) (int, error) {
	r.removed = append(r.removed, handles)
	return 0, nil
}

// TestReportVolumes: the reporter destroys the volumes the ATC marked destroying, then
// reports those left, as a worker's volume sweeper and reporter do; when the ATC cannot
// be asked, nothing is destroyed or reported.
func TestReportVolumes(t *testing.T) {
	v, bc := serveVolumes(t)
	ctx := context.Background()
	for _, h := range []string{"keep", "orphan"} {
		if _, err := bc.CreateVolume(ctx, h, baggageclaim.VolumeSpec{Strategy: baggageclaim.EmptyStrategy{}}); err != nil {
			t.Fatal(err)
		}
	}
	rec := &volumeRecords{err: errors.New("database down")}
	r := &Reporter{Worker: "tekton-ci", Volumes: v, VolumeRecords: rec, Logger: lagertest.NewTestLogger("report")}
	if err := r.ReportVolumes(ctx); err == nil || len(rec.missing) != 0 {
		t.Errorf("database down: %v, %+v; want an error and nothing reported", err, rec)
	}
	rec.err, rec.destroying = nil, []string{"orphan"}
	if err := r.ReportVolumes(ctx); err != nil {
		t.Fatal(err)
	}
	if handles, _ := v.VolumeHandles(ctx); !slices.Equal(handles, []string{"keep"}) {
		t.Errorf("volumes left %v; want keep", handles)
	}
	for _, reported := range [][][]string{rec.unknown, rec.missing, rec.removed} {
		if len(reported) != 1 || !slices.Equal(reported[0], []string{"keep"}) {
			t.Errorf("reported %v; want keep, once", reported)
		}
	}
	// A reporter of containers alone reports no volumes.
	if err := (&Reporter{Worker: "tekton-ci"}).ReportVolumes(ctx); err != nil {
		t.Error(err)
	}
}

func gzipReader(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }
