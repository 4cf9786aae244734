package tektonworker

import (
	"cmp"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"code.cloudfoundry.org/lager/v3"
	"code.cloudfoundry.org/lager/v3/lagerctx"
	"github.com/concourse/concourse/atc/db/encryption"
	"github.com/concourse/concourse/go-archive/tarfs"
	"github.com/concourse/concourse/worker/baggageclaim"
	"github.com/concourse/concourse/worker/baggageclaim/volume"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// A worker's volumes are shared by every web node of the installation through their
// database: a worker is a namespace, not a host, and with several web nodes the one that
// takes fly execute's upload is seldom the one whose engine runs the build, nor the one
// fly then downloads the outputs from. The database holds each volume (its properties
// and, once streamed in, its contents as a zstd tar in chunks, encrypted with the web
// node's --encryption-key when it has one); a web node's directory holds copies, made
// when it first serves a volume and made again when another node has streamed into it
// since. A volume is written once (fly execute's inputs, a build's output) and read
// after, so the copies stay right without more coordination than the generation each
// stream in counts up.

// VolumeDB is the database volumes are shared through: the ATC's (db.DbConn), or any
// *sql.DB. A connection of its own (Conn) holds a transaction.
type VolumeDB interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	Conn(context.Context) (*sql.Conn, error)
}

// volumeChunk is how many bytes of a volume's tar one row holds.
const volumeChunk = 1 << 20

// volumesSchemaLock is the advisory lock under which web nodes starting together make
// the tables (CREATE TABLE IF NOT EXISTS alone races). A single bigint key, which never
// meets Concourse's locks: theirs are pairs of ints, or small ints.
const volumesSchemaLock = 0x636f6e636f757273 // "concours"

const volumesSchema = `
CREATE TABLE IF NOT EXISTS tekton_volumes (
	worker_name text NOT NULL,
	handle text NOT NULL,
	properties jsonb NOT NULL DEFAULT '{}',
	privileged boolean NOT NULL DEFAULT false,
	generation bigint NOT NULL DEFAULT 0,
	created_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (worker_name, handle)
);
CREATE TABLE IF NOT EXISTS tekton_volume_chunks (
	worker_name text NOT NULL,
	handle text NOT NULL,
	seq integer NOT NULL,
	data bytea NOT NULL,
	nonce text,
	PRIMARY KEY (worker_name, handle, seq),
	FOREIGN KEY (worker_name, handle) REFERENCES tekton_volumes (worker_name, handle) ON DELETE CASCADE
);`

// volumeStore is one worker's volumes in the database.
type volumeStore struct {
	db     VolumeDB
	crypt  encryption.Strategy
	worker string
}

// volumeRecord is a volume as the database has it.
type volumeRecord struct {
	handle     string
	properties volume.Properties
	privileged bool
	// generation counts the streams into the volume: 0, none yet (no contents).
	generation int64
}

// makeVolumeTables makes the tables the volumes are kept in, when they are not there.
func makeVolumeTables(ctx context.Context, db VolumeDB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(volumesSchemaLock)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, volumesSchema); err != nil {
		return err
	}
	return tx.Commit()
}

// create records a volume without contents; false: the worker has one of that handle.
func (s *volumeStore) create(ctx context.Context, handle string, props volume.Properties, privileged bool) (bool, error) {
	p, err := json.Marshal(propertiesOrEmpty(props))
	if err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO tekton_volumes (worker_name, handle, properties, privileged) VALUES ($1, $2, $3, $4)
		ON CONFLICT (worker_name, handle) DO NOTHING`, s.worker, handle, string(p), privileged)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func propertiesOrEmpty(p volume.Properties) volume.Properties {
	if p == nil {
		return volume.Properties{}
	}
	return p
}

// get reads a volume's record.
func (s *volumeStore) get(ctx context.Context, handle string) (volumeRecord, bool, error) {
	records, err := s.query(ctx, `WHERE worker_name = $1 AND handle = $2`, s.worker, handle)
	if err != nil || len(records) == 0 {
		return volumeRecord{}, false, err
	}
	return records[0], true, nil
}

// list reads the records of all the worker's volumes.
func (s *volumeStore) list(ctx context.Context) ([]volumeRecord, error) {
	return s.query(ctx, `WHERE worker_name = $1 ORDER BY handle`, s.worker)
}

func (s *volumeStore) query(ctx context.Context, where string, args ...any) ([]volumeRecord, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT handle, properties, privileged, generation FROM tekton_volumes `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var records []volumeRecord
	for rows.Next() {
		var r volumeRecord
		var props []byte
		if err := rows.Scan(&r.handle, &props, &r.privileged, &r.generation); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(props, &r.properties); err != nil {
			return nil, fmt.Errorf("the properties of volume %s: %w", r.handle, err)
		}
		records = append(records, r)
	}
	return records, rows.Err()
}

// setProperty sets one property of a volume.
func (s *volumeStore) setProperty(ctx context.Context, handle, name, value string) error {
	return s.update(ctx, handle, `properties = properties || jsonb_build_object($3::text, $4::text)`, name, value)
}

// setPrivileged sets whether a volume is privileged.
func (s *volumeStore) setPrivileged(ctx context.Context, handle string, privileged bool) error {
	return s.update(ctx, handle, `privileged = $3`, privileged)
}

func (s *volumeStore) update(ctx context.Context, handle, set string, args ...any) error {
	res, err := s.db.ExecContext(ctx, `UPDATE tekton_volumes SET `+set+` WHERE worker_name = $1 AND handle = $2`, append([]any{s.worker, handle}, args...)...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return cmp.Or(err, volume.ErrVolumeDoesNotExist)
	}
	return nil
}

// destroy deletes a volume and its contents; false: there was none.
func (s *volumeStore) destroy(ctx context.Context, handle string) (bool, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM tekton_volumes WHERE worker_name = $1 AND handle = $2`, s.worker, handle)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// write replaces a volume's contents with those read from contents, and returns their
// generation. The volume's old contents stay until the new ones are all written.
func (s *volumeStore) write(ctx context.Context, handle string, contents io.Reader) (int64, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var generation int64
	err = tx.QueryRowContext(ctx, `UPDATE tekton_volumes SET generation = generation + 1 WHERE worker_name = $1 AND handle = $2 RETURNING generation`,
		s.worker, handle).Scan(&generation)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, volume.ErrVolumeDoesNotExist
	}
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM tekton_volume_chunks WHERE worker_name = $1 AND handle = $2`, s.worker, handle); err != nil {
		return 0, err
	}
	buf := make([]byte, volumeChunk)
	for seq := 0; ; seq++ {
		n, rerr := io.ReadFull(contents, buf)
		if n > 0 {
			text, nonce, err := s.crypt.Encrypt(buf[:n])
			if err != nil {
				return 0, fmt.Errorf("encrypting volume %s: %w", handle, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO tekton_volume_chunks (worker_name, handle, seq, data, nonce) VALUES ($1, $2, $3, $4, $5)`,
				s.worker, handle, seq, []byte(text), nonce); err != nil {
				return 0, err
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return 0, rerr
		}
	}
	return generation, tx.Commit()
}

// read streams a volume's contents to w, and returns their generation; it reads them in
// one snapshot of the database, so that a write meanwhile is either all seen or not.
func (s *volumeStore) read(ctx context.Context, handle string, w io.Writer) (int64, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var generation int64
	err = tx.QueryRowContext(ctx, `SELECT generation FROM tekton_volumes WHERE worker_name = $1 AND handle = $2`, s.worker, handle).Scan(&generation)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, volume.ErrVolumeDoesNotExist
	}
	if err != nil {
		return 0, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT seq, data, nonce FROM tekton_volume_chunks WHERE worker_name = $1 AND handle = $2 ORDER BY seq`, s.worker, handle)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	next := 0
	for rows.Next() {
		var seq int
		var data []byte
		var nonce *string
		if err := rows.Scan(&seq, &data, &nonce); err != nil {
			return 0, err
		}
		if seq != next {
			return 0, fmt.Errorf("volume %s: chunk %d is missing: %w", handle, next, volume.ErrVolumeIsCorrupted)
		}
		next++
		plain, err := s.crypt.Decrypt(string(data), nonce)
		if err != nil {
			return 0, fmt.Errorf("decrypting volume %s (was the encryption key changed?): %w", handle, err)
		}
		if _, err := w.Write(plain); err != nil {
			return 0, err
		}
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	return generation, tx.Commit()
}

// sharedRepository is a worker's volumes as the database has them, served from copies in
// local, a repository of this web node's own, made as needed (see VolumeDB).
type sharedRepository struct {
	local volume.Repository
	store *volumeStore
	locks volume.LockManager
	mu    sync.Mutex
	// copies are the generations of the local copies this node made or wrote.
	copies map[string]int64
}

var _ volume.Repository = (*sharedRepository)(nil)

func newSharedRepository(local volume.Repository, store *volumeStore) *sharedRepository {
	return &sharedRepository{local: local, store: store, locks: volume.NewLockManager(), copies: map[string]int64{}}
}

func (r *sharedRepository) copyOf(handle string) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g, ok := r.copies[handle]
	return g, ok
}

func (r *sharedRepository) setCopy(handle string, generation int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.copies[handle] = generation
}

// dropCopy destroys the local copy of a volume, if there is one.
func (r *sharedRepository) dropCopy(ctx context.Context, handle string) error {
	r.mu.Lock()
	delete(r.copies, handle)
	r.mu.Unlock()
	if err := r.local.DestroyVolume(ctx, handle); err != nil && !errors.Is(err, volume.ErrVolumeDoesNotExist) {
		return err
	}
	return nil
}

// ensure makes the local copy of a volume current; volume.ErrVolumeDoesNotExist when
// the database has none. The caller holds the volume's lock.
func (r *sharedRepository) ensure(ctx context.Context, handle string) error {
	rec, found, err := r.store.get(ctx, handle)
	if err != nil {
		return err
	}
	if !found {
		if err := r.dropCopy(ctx, handle); err != nil {
			return err
		}
		return volume.ErrVolumeDoesNotExist
	}
	if g, ok := r.copyOf(handle); ok && g == rec.generation {
		if _, found, err := r.local.GetVolume(ctx, handle); err != nil || found {
			return err
		}
	}
	if err := r.dropCopy(ctx, handle); err != nil {
		return err
	}
	if _, err := r.local.CreateVolume(ctx, handle, volume.EmptyStrategy{}, propertiesOrEmpty(rec.properties), rec.privileged); err != nil {
		return err
	}
	generation := rec.generation
	if generation > 0 {
		err := piped(func(w io.Writer) (err error) {
			generation, err = r.store.read(ctx, handle, w)
			return err
		}, func(rd io.Reader) error {
			if _, err := r.streamIn(ctx, handle, ".", baggageclaim.ZstdEncoding, 0, rd); err != nil {
				return err
			}
			// What the tar's end leaves unread (its padding), so that the writer ends.
			_, err := io.Copy(io.Discard, rd)
			return err
		})
		if err != nil {
			_ = r.dropCopy(ctx, handle)
			if errors.Is(err, volume.ErrVolumeDoesNotExist) {
				return volume.ErrVolumeDoesNotExist
			}
			return fmt.Errorf("copying volume %s from the database: %w", handle, err)
		}
		lagerctx.FromContext(ctx).Debug("copied-volume", lager.Data{"handle": handle, "generation": generation})
	}
	r.setCopy(handle, generation)
	return nil
}

// piped runs produce, writing into a pipe, beside consume, reading from it, and returns
// the error of the one that failed first: the other's is only the pipe closing under it
// (a tar program says no more than its exit status).
func piped(produce func(io.Writer) error, consume func(io.Reader) error) error {
	pr, pw := io.Pipe()
	produced := make(chan error, 1)
	go func() {
		err := produce(pw)
		// Said before the pipe closes: consume, stopped by it, finds it said.
		produced <- err
		pw.CloseWithError(err)
	}()
	err := consume(pr)
	select {
	case perr := <-produced:
		// produce ended first: its error, if any, is what stopped consume.
		return cmp.Or(perr, err)
	default:
	}
	pr.CloseWithError(errors.Join(err, io.ErrClosedPipe))
	<-produced
	return err
}

// snapshot writes the local copy of a volume, whose contents this node changed, into the
// database. The caller holds the volume's lock.
func (r *sharedRepository) snapshot(ctx context.Context, handle string) error {
	var generation int64
	err := piped(func(w io.Writer) error {
		return r.streamOut(ctx, handle, ".", baggageclaim.ZstdEncoding, w)
	}, func(rd io.Reader) (err error) {
		generation, err = r.store.write(ctx, handle, rd)
		return err
	})
	if err != nil {
		_ = r.dropCopy(ctx, handle)
		if errors.Is(err, volume.ErrVolumeDoesNotExist) {
			return volume.ErrVolumeDoesNotExist
		}
		return fmt.Errorf("saving volume %s in the database: %w", handle, err)
	}
	r.setCopy(handle, generation)
	return nil
}

// locked runs f holding the volume's lock, its local copy current.
func (r *sharedRepository) locked(ctx context.Context, handle string, f func() error) error {
	r.locks.Lock(handle)
	defer r.locks.Unlock(handle)
	if err := r.ensure(ctx, handle); err != nil {
		return err
	}
	return f()
}

func (r *sharedRepository) ListVolumes(ctx context.Context, query volume.Properties) (volume.Volumes, error) {
	records, err := r.store.list(ctx)
	if err != nil {
		return nil, err
	}
	vols := volume.Volumes{}
	for _, rec := range records {
		props := propertiesOrEmpty(rec.properties)
		if props.HasProperties(query) {
			vols = append(vols, volume.Volume{Handle: rec.handle, Properties: props, Privileged: rec.privileged})
		}
	}
	return vols, nil
}

func (r *sharedRepository) GetVolume(ctx context.Context, handle string) (volume.Volume, bool, error) {
	var v volume.Volume
	var found bool
	err := r.locked(ctx, handle, func() error {
		var err error
		v, found, err = r.local.GetVolume(ctx, handle)
		return err
	})
	if err == volume.ErrVolumeDoesNotExist {
		return volume.Volume{}, false, nil
	}
	return v, found, err
}

// CreateVolume makes an empty volume: the volumes of these workers are fly execute's, which
// the ATC makes empty and streams into. Copies of other volumes (copy-on-write, or
// imported from the host) are refused.
func (r *sharedRepository) CreateVolume(ctx context.Context, handle string, strategy volume.Strategy, props volume.Properties, privileged bool) (volume.Volume, error) {
	if _, ok := strategy.(volume.EmptyStrategy); !ok {
		return volume.Volume{}, fmt.Errorf("volume %s: this worker makes only empty volumes, not %s ones", handle, strategy.String())
	}
	// Baggageclaim's server creates volumes asynchronously, past the request that asked.
	ctx = context.WithoutCancel(ctx)
	r.locks.Lock(handle)
	defer r.locks.Unlock(handle)
	created, err := r.store.create(ctx, handle, props, privileged)
	if err != nil {
		return volume.Volume{}, err
	}
	if !created {
		return volume.Volume{}, fmt.Errorf("volume %s exists already", handle)
	}
	if err := r.dropCopy(ctx, handle); err != nil {
		return volume.Volume{}, err
	}
	v, err := r.local.CreateVolume(ctx, handle, strategy, props, privileged)
	if err != nil {
		_, _ = r.store.destroy(ctx, handle)
		return volume.Volume{}, err
	}
	r.setCopy(handle, 0)
	return v, nil
}

func (r *sharedRepository) DestroyVolume(ctx context.Context, handle string) error {
	r.locks.Lock(handle)
	defer r.locks.Unlock(handle)
	destroyed, err := r.store.destroy(ctx, handle)
	if err != nil {
		return err
	}
	_, had := r.copyOf(handle)
	if err := r.dropCopy(ctx, handle); err != nil {
		return err
	}
	if !destroyed && !had {
		return volume.ErrVolumeDoesNotExist
	}
	return nil
}

// DestroyVolumeAndDescendants destroys the volume: no volume of these workers has any
// child (CreateVolume makes only empty ones).
func (r *sharedRepository) DestroyVolumeAndDescendants(ctx context.Context, handle string) error {
	return r.DestroyVolume(ctx, handle)
}

func (r *sharedRepository) SetProperty(ctx context.Context, handle, name, value string) error {
	return r.locked(ctx, handle, func() error {
		if err := r.local.SetProperty(ctx, handle, name, value); err != nil {
			return err
		}
		return r.store.setProperty(ctx, handle, name, value)
	})
}

func (r *sharedRepository) GetPrivileged(ctx context.Context, handle string) (bool, error) {
	rec, found, err := r.store.get(ctx, handle)
	if err != nil {
		return false, err
	}
	if !found {
		return false, volume.ErrVolumeDoesNotExist
	}
	return rec.privileged, nil
}

func (r *sharedRepository) SetPrivileged(ctx context.Context, handle string, privileged bool) error {
	return r.locked(ctx, handle, func() error {
		if err := r.local.SetPrivileged(ctx, handle, privileged); err != nil {
			return err
		}
		return r.store.setPrivileged(ctx, handle, privileged)
	})
}

func (r *sharedRepository) StreamIn(ctx context.Context, handle, path string, encoding baggageclaim.Encoding, limitInMB float64, stream io.Reader) (bool, error) {
	var bad bool
	err := r.locked(ctx, handle, func() error {
		var err error
		if bad, err = r.streamIn(ctx, handle, path, encoding, limitInMB, stream); err != nil {
			// What was streamed in may be there in part: the next use copies the volume
			// again from the database.
			_ = r.dropCopy(ctx, handle)
			return err
		}
		return r.snapshot(ctx, handle)
	})
	return bad, err
}

func (r *sharedRepository) StreamOut(ctx context.Context, handle, path string, encoding baggageclaim.Encoding, dest io.Writer) error {
	return r.locked(ctx, handle, func() error {
		return r.streamOut(ctx, handle, path, encoding, dest)
	})
}

func (r *sharedRepository) StreamP2pOut(ctx context.Context, handle, path string, encoding baggageclaim.Encoding, streamInURL string) error {
	return r.locked(ctx, handle, func() error {
		return r.local.StreamP2pOut(ctx, handle, path, encoding, streamInURL)
	})
}

// VolumeParent: no volume of these workers has a parent (CreateVolume makes only empty
// ones).
func (r *sharedRepository) VolumeParent(ctx context.Context, handle string) (volume.Volume, bool, error) {
	if _, found, err := r.store.get(ctx, handle); err != nil || !found {
		return volume.Volume{}, false, cmp.Or(err, volume.ErrVolumeDoesNotExist)
	}
	return volume.Volume{}, false, nil
}

// CleanupOrphanedVolumes cleans the local copies up: those of volumes the database no
// longer has go, and the local repository's own leftovers.
func (r *sharedRepository) CleanupOrphanedVolumes(ctx context.Context) error {
	if err := r.pruneCopies(ctx); err != nil {
		return err
	}
	return r.local.CleanupOrphanedVolumes(ctx)
}

// pruneCopies destroys the local copies of volumes the database no longer has (another
// web node destroyed them).
func (r *sharedRepository) pruneCopies(ctx context.Context) error {
	records, err := r.store.list(ctx)
	if err != nil {
		return err
	}
	kept := make(map[string]bool, len(records))
	for _, rec := range records {
		kept[rec.handle] = true
	}
	copies, err := r.local.ListVolumes(ctx, volume.Properties{})
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range copies {
		if kept[c.Handle] {
			continue
		}
		r.locks.Lock(c.Handle)
		if _, found, err := r.store.get(ctx, c.Handle); err != nil {
			errs = append(errs, err)
		} else if !found {
			errs = append(errs, r.dropCopy(ctx, c.Handle))
		}
		r.locks.Unlock(c.Handle)
	}
	return errors.Join(errs...)
}

// dataPath is where the local copy of a volume has its contents, and path within them.
func (r *sharedRepository) dataPath(ctx context.Context, handle, path string) (string, error) {
	v, found, err := r.local.GetVolume(ctx, handle)
	if err != nil {
		return "", err
	}
	if !found {
		return "", volume.ErrVolumeDoesNotExist
	}
	rel := filepath.Clean("/" + path)[1:]
	if rel == "" {
		return v.Path, nil
	}
	return filepath.Join(v.Path, rel), nil
}

// streamIn extracts a tar stream into the local copy of a volume, at path, as
// baggageclaim's repository does, but with Go's tar where the host has none (the web
// node's image): tarfs, as Concourse's workers on other systems than Linux.
func (r *sharedRepository) streamIn(ctx context.Context, handle, path string, encoding baggageclaim.Encoding, limitInMB float64, stream io.Reader) (bool, error) {
	dest, err := r.dataPath(ctx, handle, path)
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return false, err
	}
	limited := volume.NewLimitedReader(int(limitInMB*1024*1024), stream)
	var tarStream io.Reader
	switch encoding {
	case baggageclaim.RawEncoding:
		tarStream = limited
	case baggageclaim.GzipEncoding:
		gz, err := gzip.NewReader(limited)
		if err != nil {
			return true, cmp.Or(limited.LastError(), err)
		}
		defer gz.Close()
		tarStream = gz
	case baggageclaim.ZstdEncoding:
		zr, err := zstd.NewReader(limited)
		if err != nil {
			return true, err
		}
		defer zr.Close()
		tarStream = zr
	case baggageclaim.S2Encoding:
		tarStream = s2.NewReader(limited)
	default:
		return false, volume.ErrUnsupportedStreamEncoding
	}
	if err := tarfs.Extract(tarStream, dest); err != nil {
		if limited.LastError() != nil {
			return false, fmt.Errorf("%s: %w", err, limited.LastError())
		}
		return true, err
	}
	return false, nil
}

// streamOut writes the local copy of a volume, or what is at path in it, as a tar stream.
func (r *sharedRepository) streamOut(ctx context.Context, handle, path string, encoding baggageclaim.Encoding, dest io.Writer) error {
	src, err := r.dataPath(ctx, handle, path)
	if err != nil {
		return err
	}
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	dir, name := src, "."
	if !info.IsDir() {
		dir, name = filepath.Dir(src), filepath.Base(src)
	}
	var w io.WriteCloser
	switch encoding {
	case baggageclaim.RawEncoding:
		return tarfs.Compress(dest, dir, name)
	case baggageclaim.GzipEncoding:
		w = gzip.NewWriter(dest)
	case baggageclaim.ZstdEncoding:
		// The fastest level: volumes are written once and read once or twice.
		if w, err = zstd.NewWriter(dest, zstd.WithEncoderLevel(zstd.SpeedFastest)); err != nil {
			return err
		}
	case baggageclaim.S2Encoding:
		w = s2.NewWriter(dest)
	default:
		return volume.ErrUnsupportedStreamEncoding
	}
	if err := tarfs.Compress(w, dir, name); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}
