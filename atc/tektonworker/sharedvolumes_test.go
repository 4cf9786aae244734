package tektonworker

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"database/sql"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"code.cloudfoundry.org/lager/v3/lagerctx"
	"code.cloudfoundry.org/lager/v3/lagertest"
	"github.com/concourse/concourse/atc/db/encryption"
	"github.com/concourse/concourse/worker/baggageclaim"

	"github.com/concourse-tekton/concourse-tekton/atc/internal/pgtest"
)

// node is one web node's volumes of a worker, shared through db, and a client of its
// baggageclaim, as that node's ATC has.
type node struct {
	volumes *Volumes
	client  baggageclaim.Client
}

func shareNode(t testing.TB, db *sql.DB, crypt encryption.Strategy, worker string) node {
	t.Helper()
	v, err := OpenVolumes(lagertest.NewTestLogger("volumes"), filepath.Join(t.TempDir(), worker))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Share(context.Background(), db, crypt, worker); err != nil {
		t.Fatal(err)
	}
	return node{volumes: v, client: serve(t, v)}
}

func aesKey(t *testing.T) *encryption.Key {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	return encryption.NewKey(gcm)
}

func streamOut(t *testing.T, ctx context.Context, bc baggageclaim.Client, handle string) map[string]string {
	t.Helper()
	vol, found, err := bc.LookupVolume(ctx, handle)
	if err != nil || !found {
		t.Fatalf("looking %s up: found %v, %v", handle, found, err)
	}
	out, err := vol.StreamOut(ctx, ".", baggageclaim.RawEncoding)
	if err != nil {
		t.Fatalf("streaming %s out: %v", handle, err)
	}
	defer out.Close()
	// GNU tar names the entries ./x, Go's tar (tarfs, with no tar program) x.
	files := map[string]string{}
	for name, content := range filesOf(t, out) {
		files[strings.TrimPrefix(name, "./")] = content
	}
	return files
}

// TestSharedVolumes: two web nodes of one installation, their workers' volumes shared
// through one database (a real Postgres): what fly execute uploads through one node is
// there on the other, whose engine runs the build, with what was streamed in since, its
// properties and its destruction; a volume larger than a row round-trips; each worker
// has its own; the contents are encrypted at rest with the web node's key.
func TestSharedVolumes(t *testing.T) {
	pg := pgtest.Start(t, "127.0.0.1")
	db := pg.Open(t)
	ctx := lagerctx.NewContext(context.Background(), lagertest.NewTestLogger("test"))
	key := aesKey(t)
	a := shareNode(t, db, key, "tekton-ci")
	b := shareNode(t, db, key, "tekton-ci")

	vol, err := a.client.CreateVolume(ctx, "upload-1", baggageclaim.VolumeSpec{Strategy: baggageclaim.EmptyStrategy{}, Properties: baggageclaim.VolumeProperties{"user": "test"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := vol.StreamIn(ctx, ".", baggageclaim.GzipEncoding, 0, bytes.NewReader(gzipped(t, tarOf(t, map[string]string{"README": "hello\n", "src/main.go": "package main\n"})))); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"README": "hello\n", "src/main.go": "package main\n"}
	if got := streamOut(t, ctx, b.client, "upload-1"); !maps.Equal(got, want) {
		t.Errorf("node b streams out %v; want %v (node a's upload)", got, want)
	}

	// Streamed into on b, at a path: a's copy is made again.
	vb, _, err := b.client.LookupVolume(ctx, "upload-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := vb.StreamIn(ctx, "out", baggageclaim.RawEncoding, 0, bytes.NewReader(tarOf(t, map[string]string{"result": "42\n"}))); err != nil {
		t.Fatal(err)
	}
	want["out/result"] = "42\n"
	if got := streamOut(t, ctx, a.client, "upload-1"); !maps.Equal(got, want) {
		t.Errorf("node a streams out %v after b streamed in; want %v", got, want)
	}

	// Properties set on one node are found through the other.
	if err := vb.SetProperty(ctx, "purpose", "fly-execute"); err != nil {
		t.Fatal(err)
	}
	listed, err := a.client.ListVolumes(ctx, baggageclaim.VolumeProperties{"purpose": "fly-execute"})
	if err != nil || len(listed) != 1 || listed[0].Handle() != "upload-1" {
		t.Errorf("node a lists %v, %v by b's property; want upload-1", listed, err)
	}

	// Larger than a row, and incompressible.
	big := make([]byte, volumeChunk*5/2)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	vbig, err := b.client.CreateVolume(ctx, "output-1", baggageclaim.VolumeSpec{Strategy: baggageclaim.EmptyStrategy{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := vbig.StreamIn(ctx, ".", baggageclaim.RawEncoding, 0, bytes.NewReader(tarOf(t, map[string]string{"blob": string(big)}))); err != nil {
		t.Fatal(err)
	}
	if got := streamOut(t, ctx, a.client, "output-1"); got["blob"] != string(big) {
		t.Errorf("node a streams out a blob of %d bytes; want b's %d", len(got["blob"]), len(big))
	}
	var rows int
	if err := db.QueryRow(`SELECT count(*) FROM tekton_volume_chunks WHERE handle = 'output-1'`).Scan(&rows); err != nil || rows < 3 {
		t.Errorf("output-1 is %d rows (%v); want 3 at least", rows, err)
	}

	// Encrypted at rest.
	var plain int
	if err := db.QueryRow(`SELECT count(*) FROM tekton_volume_chunks WHERE nonce IS NULL OR position('package main'::bytea in data) > 0`).Scan(&plain); err != nil || plain != 0 {
		t.Errorf("%d chunks unencrypted (%v); want none", plain, err)
	}

	// Each node lists the worker's volumes, wherever they were made; another worker's
	// are its own.
	for name, n := range map[string]node{"a": a, "b": b} {
		if handles, err := n.volumes.VolumeHandles(ctx); err != nil || !slices.Equal(handles, []string{"output-1", "upload-1"}) {
			t.Errorf("node %s lists %v, %v; want output-1 and upload-1", name, handles, err)
		}
	}
	other := shareNode(t, db, key, "tekton-other")
	if handles, err := other.volumes.VolumeHandles(ctx); err != nil || len(handles) != 0 {
		t.Errorf("another worker lists %v, %v; want none", handles, err)
	}
	if _, found, err := other.client.LookupVolume(ctx, "upload-1"); found || err != nil {
		t.Errorf("another worker finds upload-1 (%v, %v)", found, err)
	}

	// Destroyed through one node: gone from the other, and its copy too once it lists.
	if err := b.volumes.DestroyVolumes(ctx, []string{"upload-1"}); err != nil {
		t.Fatal(err)
	}
	if _, found, err := a.client.LookupVolume(ctx, "upload-1"); found || err != nil {
		t.Errorf("node a finds upload-1 (%v, %v) once b destroyed it", found, err)
	}
	if _, err := a.volumes.VolumeHandles(ctx); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Join(a.volumes.Dir, "live")); slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() == "upload-1" }) {
		t.Error("node a keeps its copy of upload-1 once destroyed")
	}

	// A node with another key cannot read the contents: an error, not garbage.
	c := shareNode(t, db, aesKey(t), "tekton-ci")
	vc, found, err := c.client.LookupVolume(ctx, "output-1")
	if err == nil && found {
		if out, err := vc.StreamOut(ctx, ".", baggageclaim.RawEncoding); err == nil {
			b, _ := io.ReadAll(out)
			out.Close()
			t.Errorf("read with another key: %d bytes, no error", len(b))
		}
	}

	// Only empty volumes: a copy of one is refused (baggageclaim's client says only
	// that it failed).
	if _, err := a.client.CreateVolume(ctx, "cow", baggageclaim.VolumeSpec{Strategy: baggageclaim.COWStrategy{Parent: vbig}}); err == nil {
		t.Errorf("copy-on-write volume: %v; want refused", err)
	}
}

// TestSharedVolumesUnencrypted: without an encryption key, the contents are stored as
// they are, and read back; with no tar program, as in the web node's image.
func TestSharedVolumesUnencrypted(t *testing.T) {
	pg := pgtest.Start(t, "127.0.0.1")
	db := pg.Open(t)
	t.Setenv("PATH", t.TempDir())
	ctx := context.Background()
	a := shareNode(t, db, encryption.NewNoEncryption(), "tekton-ci")
	b := shareNode(t, db, encryption.NewNoEncryption(), "tekton-ci")
	vol, err := a.client.CreateVolume(ctx, "upload", baggageclaim.VolumeSpec{Strategy: baggageclaim.EmptyStrategy{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := vol.StreamIn(ctx, ".", baggageclaim.GzipEncoding, 0, bytes.NewReader(gzipped(t, tarOf(t, map[string]string{"x": "y", "d/z": "w"})))); err != nil {
		t.Fatal(err)
	}
	if got := streamOut(t, ctx, b.client, "upload"); !maps.Equal(got, map[string]string{"x": "y", "d/z": "w"}) {
		t.Errorf("node b streams out %v; want x and d/z", got)
	}
	// A path that climbs out of the volume stays in it.
	vb, _, err := b.client.LookupVolume(ctx, "upload")
	if err != nil {
		t.Fatal(err)
	}
	if err := vb.StreamIn(ctx, "../../escape", baggageclaim.RawEncoding, 0, bytes.NewReader(tarOf(t, map[string]string{"f": "g"}))); err != nil {
		t.Fatal(err)
	}
	if got := streamOut(t, ctx, a.client, "upload"); got["escape/f"] != "g" {
		t.Errorf("streamed in at ../../escape: %v; want escape/f in the volume", got)
	}
	// Over the stream's limit: refused.
	if err := vb.StreamIn(ctx, ".", baggageclaim.RawEncoding, 0.001, bytes.NewReader(tarOf(t, map[string]string{"big": strings.Repeat("x", 10000)}))); err == nil {
		t.Error("a stream over its limit: no error")
	}
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkVolumes: fly execute's path through a worker's volumes, a 16 MiB upload
// streamed in and out again: on one web node's own disk (local), and shared through the
// database, streamed in on one node and out on another (shared), in the same run.
func BenchmarkVolumes(b *testing.B) {
	pg := pgtest.Start(b, "127.0.0.1")
	db := pg.Open(b)
	ctx := context.Background()
	blob := make([]byte, 16<<20)
	if _, err := rand.Read(blob[:len(blob)/2]); err != nil { // half incompressible, half zeros
		b.Fatal(err)
	}
	upload := tarOf(b, map[string]string{"blob": string(blob)})
	run := func(b *testing.B, in, out baggageclaim.Client) {
		b.SetBytes(int64(len(upload)))
		for i := 0; b.Loop(); i++ {
			handle := fmt.Sprintf("bench-%d", i)
			vol, err := in.CreateVolume(ctx, handle, baggageclaim.VolumeSpec{Strategy: baggageclaim.EmptyStrategy{}})
			if err != nil {
				b.Fatal(err)
			}
			if err := vol.StreamIn(ctx, ".", baggageclaim.RawEncoding, 0, bytes.NewReader(upload)); err != nil {
				b.Fatal(err)
			}
			other, found, err := out.LookupVolume(ctx, handle)
			if err != nil || !found {
				b.Fatalf("lookup: %v %v", found, err)
			}
			r, err := other.StreamOut(ctx, ".", baggageclaim.RawEncoding)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, r); err != nil {
				b.Fatal(err)
			}
			r.Close()
			if err := vol.Destroy(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("local", func(b *testing.B) {
		v, err := OpenVolumes(lagertest.NewTestLogger("volumes"), filepath.Join(b.TempDir(), "tekton-ci"))
		if err != nil {
			b.Fatal(err)
		}
		c := serve(b, v)
		run(b, c, c)
	})
	b.Run("shared", func(b *testing.B) {
		x, y := shareNode(b, db, encryption.NewNoEncryption(), "tekton-bench"), shareNode(b, db, encryption.NewNoEncryption(), "tekton-bench")
		run(b, x.client, y.client)
	})
}
