package tektonworker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"code.cloudfoundry.org/lager/v3/lagerctx"
	"github.com/concourse/concourse/atc/db/encryption"
	"github.com/concourse/concourse/worker/baggageclaim/api"
	"github.com/concourse/concourse/worker/baggageclaim/uidgid"
	"github.com/concourse/concourse/worker/baggageclaim/volume"
	"github.com/concourse/concourse/worker/baggageclaim/volume/driver"
)

// Volumes is a worker's baggageclaim: the volumes the ATC makes on the worker itself,
// which are not build volumes (those are the builds' PersistentVolumeClaims) but what
// fly execute moves: the inputs it uploads, and a one-off build's outputs, copied from
// its run for fly to download. They are directories under Dir on the web node's host,
// made, streamed and destroyed by Concourse's own baggageclaim (its API and its naive
// driver, which copies where the others snapshot), and kept across restarts of the web
// node, as a worker keeps its volumes.
//
// Shared (Share), they are the worker's volumes of every web node of the installation,
// kept in their database, and the directory holds this node's copies (see VolumeDB).
type Volumes struct {
	Dir  string
	repo volume.Repository
	// shared is repo once Share made it the database's.
	shared *sharedRepository
}

// OpenVolumes opens the volumes under dir, making it if need be; their filesystem logs
// to logger.
func OpenVolumes(logger lager.Logger, dir string) (*Volumes, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("the worker's volumes: %w", err)
	}
	d := &driver.NaiveDriver{}
	fs, err := volume.NewFilesystem(logger, d, dir)
	if err != nil {
		return nil, fmt.Errorf("the worker's volumes in %s: %w", dir, err)
	}
	// The web node is no container runtime: the files keep the owners they are streamed
	// with, as with --baggageclaim-disable-user-namespaces.
	repo := volume.NewRepository(fs, volume.NewLockManager(), uidgid.NoopNamespacer{}, uidgid.NoopNamespacer{})
	return &Volumes{Dir: dir, repo: repo}, nil
}

// Share keeps the volumes in db as those of worker, shared with every web node that uses
// the database, their contents encrypted with crypt (the ATC's encryption strategy). It
// makes the database's tables when they are not there. It is called before Serve.
func (v *Volumes) Share(ctx context.Context, db VolumeDB, crypt encryption.Strategy, worker string) error {
	if err := makeVolumeTables(ctx, db); err != nil {
		return fmt.Errorf("making the tables of the workers' volumes: %w", err)
	}
	v.shared = newSharedRepository(v.repo, &volumeStore{db: db, crypt: crypt, worker: worker})
	v.repo = v.shared
	return nil
}

// Serve serves the baggageclaim API on l until ctx ends. Like Garden's, it authenticates
// no one: on a loopback address only the web node's own user is served (see Garden.Serve).
func (v *Volumes) Serve(ctx context.Context, l net.Listener, logger lager.Logger) error {
	// Peer-to-peer streaming (between workers' baggageclaims, --enable-p2p-volume-streaming)
	// matches no interface: the ATC streams through itself.
	handler, err := api.NewHandler(logger.Session("api"), volume.NewStrategizer(), v.repo, regexp.MustCompile(`\A\z`), 4, 0)
	if err != nil {
		return err
	}
	l = newOwnUserListener(l, logger)
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutdown); err != nil {
			srv.Close()
		}
		<-done
		return nil
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// VolumeHandles lists the volumes. Shared, it also destroys this node's copies of those
// another node destroyed.
func (v *Volumes) VolumeHandles(ctx context.Context) ([]string, error) {
	if v.shared != nil {
		if err := v.shared.pruneCopies(ctx); err != nil {
			lagerctx.FromContext(ctx).Error("pruning-volume-copies", err)
		}
	}
	vols, err := v.repo.ListVolumes(ctx, volume.Properties{})
	if err != nil {
		return nil, err
	}
	handles := make([]string, 0, len(vols))
	for _, vol := range vols {
		handles = append(handles, vol.Handle)
	}
	return handles, nil
}

// DestroyVolumes destroys the volumes of these handles that exist.
func (v *Volumes) DestroyVolumes(ctx context.Context, handles []string) error {
	var errs []error
	for _, h := range handles {
		err := v.repo.DestroyVolume(ctx, h)
		if err != nil && !errors.Is(err, volume.ErrVolumeDoesNotExist) {
			errs = append(errs, fmt.Errorf("destroying volume %s: %w", h, err))
		}
	}
	return errors.Join(errs...)
}
