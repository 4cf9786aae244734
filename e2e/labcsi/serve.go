package labcsi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// SysMounter is the Mounter of a real node (root only).
type SysMounter struct{}

var _ Mounter = SysMounter{}

// Bind implements Mounter.
func (SysMounter) Bind(source, target string, readOnly bool) error {
	if err := syscall.Mount(source, target, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mounting %s on %s: %w", source, target, err)
	}
	if readOnly {
		if err := syscall.Mount("", target, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("remounting %s read-only: %w", target, err)
		}
	}
	return nil
}

// Unmount implements Mounter.
func (SysMounter) Unmount(target string) error {
	if err := syscall.Unmount(target, 0); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("unmounting %s: %w", target, err)
	}
	return nil
}

// Tmpfs implements Mounter.
func (SysMounter) Tmpfs(target string, size int64) error {
	if err := syscall.Mount("tmpfs", target, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0777", size)); err != nil {
		return fmt.Errorf("mounting a file system of %d bytes on %s: %w", size, target, err)
	}
	return nil
}

// IsMounted implements Mounter by reading /proc/self/mountinfo: a bind mount of a
// directory on the same file system has the same device, so stat cannot tell.
func (SysMounter) IsMounted(target string) (bool, error) {
	if _, err := os.Stat(target); err != nil {
		return false, err
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, fmt.Errorf("reading mounts: %w", err)
	}
	defer f.Close()
	return mountedIn(bufio.NewScanner(f), filepath.Clean(target))
}

// mountedIn reports whether target is the mount point (fifth field) of a mountinfo line.
func mountedIn(s *bufio.Scanner, target string) (bool, error) {
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 4 && unescapeMountinfo(fields[4]) == target {
			return true, nil
		}
	}
	return false, s.Err()
}

// unescapeMountinfo undoes the octal escapes (\040 for space) of /proc/self/mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			ok := true
			for _, c := range []byte(s[i+1 : i+4]) {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + (c - '0')
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Serve serves the CSI services on csiSocket and the registration service on
// registrationSocket (in the kubelet's plugins_registry directory) until ctx ends.
func Serve(ctx context.Context, d *Driver, csiSocket, registrationSocket string) error {
	csiSrv := grpc.NewServer()
	csi.RegisterIdentityServer(csiSrv, d)
	csi.RegisterControllerServer(csiSrv, d)
	csi.RegisterNodeServer(csiSrv, d)
	regSrv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(regSrv, d)

	errs := make(chan error, 2)
	for _, s := range []struct {
		srv  *grpc.Server
		path string
	}{{csiSrv, csiSocket}, {regSrv, registrationSocket}} {
		if err := os.MkdirAll(filepath.Dir(s.path), 0o750); err != nil {
			return fmt.Errorf("creating socket directory: %w", err)
		}
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing stale socket: %w", err)
		}
		l, err := net.Listen("unix", s.path)
		if err != nil {
			return fmt.Errorf("listening on %s: %w", s.path, err)
		}
		go func() { errs <- s.srv.Serve(l) }()
	}
	select {
	case <-ctx.Done():
	case err := <-errs:
		csiSrv.Stop()
		regSrv.Stop()
		return fmt.Errorf("serving: %w", err)
	}
	// Stop the registration first: the kubelet then deregisters the driver.
	regSrv.GracefulStop()
	csiSrv.GracefulStop()
	os.Remove(registrationSocket)
	os.Remove(csiSocket)
	return nil
}
