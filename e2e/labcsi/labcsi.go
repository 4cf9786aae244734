package labcsi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Mounter makes and removes the bind mounts that publish a volume, and the file systems
// of the volumes whose capacity is enforced. Bind and Unmount must be idempotent;
// IsMounted reports whether target is a mount point; Tmpfs mounts on target a file
// system in memory that holds at most size bytes, writable by every user.
type Mounter interface {
	Bind(source, target string, readOnly bool) error
	Unmount(target string) error
	IsMounted(target string) (bool, error)
	Tmpfs(target string, size int64) error
}

// EnforceCapacity is the StorageClass parameter ("true") that gives each volume a file
// system of its own of the claim's size, so that a step writing past it gets ENOSPC, as
// on a real disk that fills; without it a volume is a directory of the node's disk.
const EnforceCapacity = "enforceCapacity"

// Copier copies the contents of directory src into the existing, empty directory dst,
// keeping modes, ownership and symlinks.
type Copier func(src, dst string) error

// CopyWithCP is the Copier of a real node: `cp -a`.
func CopyWithCP(src, dst string) error {
	out, err := exec.Command("cp", "-a", src+"/.", dst).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cp -a %s %s: %w: %s", src, dst, err, out)
	}
	return nil
}

// Driver is the CSI Identity, Controller and Node service, plus the kubelet's plugin
// registration service.
type Driver struct {
	Name     string // the CSI driver name, e.g. labcsi.e2e.invalid
	Version  string
	NodeID   string
	Root     string // volumes are Root/<volume id>
	Endpoint string // the CSI socket, as the kubelet should dial it
	Mounter  Mounter
	Copy     Copier

	mu sync.Mutex // serialises create and delete, so a clone never sees a half-made source

	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer
	registerapi.UnimplementedRegistrationServer
}

var (
	_ csi.IdentityServer             = (*Driver)(nil)
	_ csi.ControllerServer           = (*Driver)(nil)
	_ csi.NodeServer                 = (*Driver)(nil)
	_ registerapi.RegistrationServer = (*Driver)(nil)
)

// validID is what the driver accepts as a volume name; the external-provisioner's
// "pvc-<uid>" names match it.
var validID = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)

func (d *Driver) volumePath(id string) (string, error) {
	if !validID.MatchString(id) {
		return "", status.Errorf(codes.InvalidArgument, "invalid volume id %q", id)
	}
	return filepath.Join(d.Root, id), nil
}

// GetPluginInfo implements csi.IdentityServer.
func (d *Driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: d.Name, VendorVersion: d.Version}, nil
}

// GetPluginCapabilities implements csi.IdentityServer.
func (d *Driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{{
		Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}},
	}}}, nil
}

// Probe implements csi.IdentityServer.
func (d *Driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

// ControllerGetCapabilities implements csi.ControllerServer.
func (d *Driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, c := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_CLONE_VOLUME,
	} {
		caps = append(caps, &csi.ControllerServiceCapability{
			Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: c}},
		})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

// CreateVolume implements csi.ControllerServer: an empty directory, or a copy of the
// source volume when the request clones one; with EnforceCapacity, a file system of the
// capacity asked for mounted on the directory. Creating an existing volume succeeds.
func (d *Driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	path, err := d.volumePath(req.GetName())
	if err != nil {
		return nil, err
	}
	var source string
	if src := req.GetVolumeContentSource(); src != nil {
		v := src.GetVolume()
		if v == nil {
			return nil, status.Error(codes.InvalidArgument, "only volumes can be cloned (no snapshots)")
		}
		if source, err = d.volumePath(v.GetVolumeId()); err != nil {
			return nil, err
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	resp := &csi.CreateVolumeResponse{Volume: &csi.Volume{
		VolumeId:      req.GetName(),
		CapacityBytes: req.GetCapacityRange().GetRequiredBytes(),
		ContentSource: req.GetVolumeContentSource(),
	}}
	sized := req.GetParameters()[EnforceCapacity] == "true"
	if sized && resp.Volume.CapacityBytes <= 0 {
		return nil, status.Errorf(codes.InvalidArgument, "%s: the claim asks for no capacity to enforce", EnforceCapacity)
	}
	if _, err := os.Stat(path); err == nil {
		if !sized || d.complete(path) {
			return resp, nil
		}
		// A sized volume whose making stopped half-way: made again.
		if err := d.remove(path); err != nil {
			return nil, status.Errorf(codes.Internal, "cleaning %s: %v", path, err)
		}
	}
	if source != "" {
		if _, err := os.Stat(source); err != nil {
			return nil, status.Errorf(codes.NotFound, "source volume %s: %v", filepath.Base(source), err)
		}
	}
	// Build the volume under a temporary name so that a crash never leaves a half copy
	// that a retry would take for the finished volume.
	tmp := path + ".creating"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, status.Errorf(codes.Internal, "cleaning %s: %v", tmp, err)
	}
	if err := os.MkdirAll(tmp, 0o777); err != nil {
		return nil, status.Errorf(codes.Internal, "creating volume: %v", err)
	}
	// Pods run as any user: the directory is world-writable, as an empty volume is.
	if err := os.Chmod(tmp, 0o777); err != nil {
		return nil, status.Errorf(codes.Internal, "creating volume: %v", err)
	}
	if sized {
		// A mount point cannot be renamed: the file system goes on the volume's own
		// directory, and a mark beside it says once it holds all it should.
		if err := os.Rename(tmp, path); err != nil {
			return nil, status.Errorf(codes.Internal, "creating volume: %v", err)
		}
		if err := d.Mounter.Tmpfs(path, resp.Volume.CapacityBytes); err != nil {
			return nil, status.Errorf(codes.Internal, "creating volume: %v", err)
		}
		tmp = path
	}
	if source != "" {
		if err := d.Copy(source, tmp); err != nil {
			d.remove(tmp)
			return nil, status.Errorf(codes.Internal, "cloning: %v", err)
		}
	}
	if sized {
		if err := os.WriteFile(path+completeSuffix, nil, 0o644); err != nil {
			return nil, status.Errorf(codes.Internal, "creating volume: %v", err)
		}
		return resp, nil
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, status.Errorf(codes.Internal, "creating volume: %v", err)
	}
	return resp, nil
}

// completeSuffix names the mark beside a sized volume's directory that it was made.
const completeSuffix = ".complete"

// complete tells whether the sized volume at path was made whole.
func (d *Driver) complete(path string) bool {
	_, err := os.Stat(path + completeSuffix)
	return err == nil
}

// remove deletes the volume at path: its file system, if it has one, its directory and
// its mark.
func (d *Driver) remove(path string) error {
	mounted, err := d.Mounter.IsMounted(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if mounted {
		if err := d.Mounter.Unmount(path); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(path); err != nil {
		return err
	}
	if err := os.Remove(path + completeSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// DeleteVolume implements csi.ControllerServer. Deleting a missing volume succeeds.
func (d *Driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	path, err := d.volumePath(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.remove(path); err != nil {
		return nil, status.Errorf(codes.Internal, "deleting volume: %v", err)
	}
	return &csi.DeleteVolumeResponse{}, nil
}

// ValidateVolumeCapabilities implements csi.ControllerServer: a directory serves any
// access mode on this single node.
func (d *Driver) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	path, err := d.volumePath(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s: %v", req.GetVolumeId(), err)
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeCapabilities: req.GetVolumeCapabilities(),
	}}, nil
}

// NodeGetCapabilities implements csi.NodeServer: no staging, so the kubelet publishes
// directly.
func (d *Driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

// NodeGetInfo implements csi.NodeServer.
func (d *Driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: d.NodeID}, nil
}

// NodePublishVolume implements csi.NodeServer: bind-mounts the volume's directory on
// the target path.
func (d *Driver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	path, err := d.volumePath(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	target := req.GetTargetPath()
	if target == "" {
		return nil, status.Error(codes.InvalidArgument, "no target path")
	}
	if _, err := os.Stat(path); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s: %v", req.GetVolumeId(), err)
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "creating target: %v", err)
	}
	mounted, err := d.Mounter.IsMounted(target)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "inspecting target: %v", err)
	}
	if !mounted {
		if err := d.Mounter.Bind(path, target, req.GetReadonly()); err != nil {
			return nil, status.Errorf(codes.Internal, "mounting: %v", err)
		}
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume implements csi.NodeServer: unmounts and removes the target.
func (d *Driver) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	target := req.GetTargetPath()
	if target == "" {
		return nil, status.Error(codes.InvalidArgument, "no target path")
	}
	mounted, err := d.Mounter.IsMounted(target)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "inspecting target: %v", err)
	}
	if mounted {
		if err := d.Mounter.Unmount(target); err != nil {
			return nil, status.Errorf(codes.Internal, "unmounting: %v", err)
		}
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "removing target: %v", err)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// GetInfo implements the kubelet's plugin registration service: it tells the kubelet
// this is a CSI driver and where its socket is.
func (d *Driver) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              d.Name,
		Endpoint:          d.Endpoint,
		SupportedVersions: []string{"1.0.0"},
	}, nil
}

// NotifyRegistrationStatus implements the kubelet's plugin registration service.
func (d *Driver) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if !s.PluginRegistered {
		return nil, fmt.Errorf("kubelet refused the registration: %s", s.Error)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}
