package labcsi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// fakeMounter records bind mounts and file systems instead of making them, so the tests
// need no root.
type fakeMounter struct{ mounts map[string]string }

var _ Mounter = (*fakeMounter)(nil)

func (m *fakeMounter) Bind(source, target string, _ bool) error {
	m.mounts[target] = source
	return nil
}
func (m *fakeMounter) Tmpfs(target string, size int64) error {
	m.mounts[target] = fmt.Sprintf("tmpfs of %d bytes", size)
	return nil
}
func (m *fakeMounter) Unmount(target string) error { delete(m.mounts, target); return nil }
func (m *fakeMounter) IsMounted(target string) (bool, error) {
	_, ok := m.mounts[target]
	return ok, nil
}

func newDriver(t *testing.T) (*Driver, *fakeMounter) {
	t.Helper()
	m := &fakeMounter{mounts: map[string]string{}}
	return &Driver{Name: "labcsi.test", NodeID: "n1", Root: t.TempDir(), Endpoint: "/x.sock", Mounter: m, Copy: CopyWithCP}, m
}

func create(t *testing.T, d *Driver, name, from string) error {
	t.Helper()
	req := &csi.CreateVolumeRequest{Name: name, CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20}}
	if from != "" {
		req.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
			Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: from},
		}}
	}
	resp, err := d.CreateVolume(context.Background(), req)
	if err == nil && (resp.Volume.VolumeId != name || resp.Volume.CapacityBytes != 1<<20) {
		t.Errorf("volume %+v", resp.Volume)
	}
	return err
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCloneCopiesAndStaysIndependent(t *testing.T) {
	d, _ := newDriver(t)
	if err := create(t, d, "pvc-src", ""); err != nil {
		t.Fatalf("create: %v", err)
	}
	src := filepath.Join(d.Root, "pvc-src")
	write(t, filepath.Join(src, "data"), "original")
	if err := create(t, d, "pvc-clone", "pvc-src"); err != nil {
		t.Fatalf("clone: %v", err)
	}
	clone := filepath.Join(d.Root, "pvc-clone")
	if got := read(t, filepath.Join(clone, "data")); got != "original" {
		t.Errorf("clone sees %q, want the source's data", got)
	}
	write(t, filepath.Join(clone, "data"), "changed")
	if got := read(t, filepath.Join(src, "data")); got != "original" {
		t.Errorf("source changed to %q by a write to the clone", got)
	}
	// Creating again is a no-op: the clone keeps its own data.
	if err := create(t, d, "pvc-clone", "pvc-src"); err != nil {
		t.Fatalf("create again: %v", err)
	}
	if got := read(t, filepath.Join(clone, "data")); got != "changed" {
		t.Errorf("repeated create replaced the clone's data: %q", got)
	}
	for range 2 {
		if _, err := d.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: "pvc-clone"}); err != nil {
			t.Fatalf("delete: %v", err)
		}
	}
	if _, err := os.Stat(clone); !os.IsNotExist(err) {
		t.Errorf("clone still exists: %v", err)
	}
}

// TestSizedVolume: with enforceCapacity, a volume is a file system of the claim's size on
// its directory, made whole once (a half-made one, without its mark, is made again), and
// deleting it unmounts it; a claim of no size has none to enforce.
func TestSizedVolume(t *testing.T) {
	d, m := newDriver(t)
	sized := func(name string, bytes int64) error {
		_, err := d.CreateVolume(context.Background(), &csi.CreateVolumeRequest{
			Name: name, CapacityRange: &csi.CapacityRange{RequiredBytes: bytes},
			Parameters: map[string]string{EnforceCapacity: "true"},
		})
		return err
	}
	path := filepath.Join(d.Root, "pvc-sized")
	if err := sized("pvc-sized", 64<<20); err != nil {
		t.Fatal(err)
	}
	if got := m.mounts[path]; got != "tmpfs of 67108864 bytes" {
		t.Errorf("mounted on the volume: %q, want a tmpfs of 64 MiB", got)
	}
	write(t, filepath.Join(path, "data"), "kept")
	if err := sized("pvc-sized", 64<<20); err != nil || read(t, filepath.Join(path, "data")) != "kept" {
		t.Errorf("creating again: %v; want the volume as it is", err)
	}
	if err := os.Remove(path + completeSuffix); err != nil {
		t.Fatal(err)
	}
	if err := sized("pvc-sized", 64<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(path, "data")); !os.IsNotExist(err) {
		t.Errorf("a half-made volume was not made again: %v", err)
	}
	if _, err := d.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: "pvc-sized"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.mounts[path]; ok {
		t.Error("the volume's file system is still mounted after its deletion")
	}
	for _, p := range []string{path, path + completeSuffix} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still exists: %v", p, err)
		}
	}
	if got := status.Code(sized("pvc-nothing", 0)); got != codes.InvalidArgument {
		t.Errorf("a sized volume of no capacity: %v, want InvalidArgument", got)
	}
}

// TestSizedVolumeFills: on a real node (root), a sized volume refuses what is written
// past its size with ENOSPC.
func TestSizedVolumeFills(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a file system needs root")
	}
	d, _ := newDriver(t)
	d.Mounter = SysMounter{}
	_, err := d.CreateVolume(context.Background(), &csi.CreateVolumeRequest{
		Name: "pvc-full", CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20},
		Parameters: map[string]string{EnforceCapacity: "true"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: "pvc-full"}) })
	err = os.WriteFile(filepath.Join(d.Root, "pvc-full", "fill"), make([]byte, 2<<20), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("writing 2 MiB into a volume of 1 MiB: %v, want ENOSPC", err)
	}
}

func TestCreateErrors(t *testing.T) {
	d, _ := newDriver(t)
	for _, tc := range []struct {
		name, volume, from string
		want               codes.Code
	}{
		{"invalid name", "../escape", "", codes.InvalidArgument},
		{"upper case", "PVC", "", codes.InvalidArgument},
		{"missing source", "pvc-a", "pvc-missing", codes.NotFound},
		{"invalid source", "pvc-a", "../x", codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := status.Code(create(t, d, tc.volume, tc.from)); got != tc.want {
				t.Errorf("code %v, want %v", got, tc.want)
			}
		})
	}
	snap := &csi.CreateVolumeRequest{Name: "pvc-b", VolumeContentSource: &csi.VolumeContentSource{
		Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: "s"}},
	}}
	if _, err := d.CreateVolume(context.Background(), snap); status.Code(err) != codes.InvalidArgument {
		t.Errorf("snapshot source: %v, want InvalidArgument", err)
	}
}

func TestPublish(t *testing.T) {
	d, m := newDriver(t)
	ctx := context.Background()
	if err := create(t, d, "pvc-p", ""); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "pods", "mount")
	for range 2 {
		if _, err := d.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "pvc-p", TargetPath: target}); err != nil {
			t.Fatalf("publish: %v", err)
		}
	}
	if diff := cmp.Diff(map[string]string{target: filepath.Join(d.Root, "pvc-p")}, m.mounts); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	for range 2 {
		if _, err := d.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "pvc-p", TargetPath: target}); err != nil {
			t.Fatalf("unpublish: %v", err)
		}
	}
	if len(m.mounts) != 0 {
		t.Errorf("mounts left: %v", m.mounts)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("target left behind: %v", err)
	}
	if _, err := d.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "pvc-none", TargetPath: target}); status.Code(err) != codes.NotFound {
		t.Errorf("publishing a missing volume: %v, want NotFound", err)
	}
}

func TestMountedIn(t *testing.T) {
	const info = `22 1 0:21 / / rw - ext4 /dev/vda rw
95 22 0:21 /vols/pvc-1 /var/lib/kubelet/pods/a\040b/mount rw - ext4 /dev/vda rw
`
	for _, tc := range []struct {
		target string
		want   bool
	}{
		{"/var/lib/kubelet/pods/a b/mount", true},
		{"/", true},
		{"/var/lib/kubelet", false},
	} {
		t.Run(tc.target, func(t *testing.T) {
			got, err := mountedIn(bufio.NewScanner(strings.NewReader(info)), tc.target)
			if err != nil || got != tc.want {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestServe talks to the driver over its real sockets, as the kubelet and the
// external-provisioner do.
func TestServe(t *testing.T) {
	d, _ := newDriver(t)
	dir, err := os.MkdirTemp("", "labcsi") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	csiSock, regSock := filepath.Join(dir, "csi.sock"), filepath.Join(dir, "reg", "labcsi-reg.sock")
	d.Endpoint = csiSock
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, d, csiSock, regSock) }()

	dial := func(path string) *grpc.ClientConn {
		t.Helper()
		for i := 0; i < 100; i++ {
			if _, err := os.Stat(path); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		return conn
	}
	c, r := dial(csiSock), dial(regSock)
	defer c.Close()
	defer r.Close()
	info, err := csi.NewIdentityClient(c).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil || info.Name != "labcsi.test" {
		t.Errorf("GetPluginInfo: %v, %v", info, err)
	}
	caps, err := csi.NewControllerClient(c).ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
	if err != nil || len(caps.Capabilities) != 2 {
		t.Errorf("ControllerGetCapabilities: %v, %v", caps, err)
	}
	pi, err := registerapi.NewRegistrationClient(r).GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatalf("GetInfo: %v", err)
	}
	want := &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "labcsi.test", Endpoint: csiSock, SupportedVersions: []string{"1.0.0"}}
	if pi.Type != want.Type || pi.Name != want.Name || pi.Endpoint != want.Endpoint || !cmp.Equal(pi.SupportedVersions, want.SupportedVersions) {
		t.Errorf("GetInfo = %v, want %v", pi, want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if _, err := os.Stat(regSock); !os.IsNotExist(err) {
		t.Errorf("registration socket left behind: %v", err)
	}
}
