// Package labcsi is a small CSI driver for the e2e cluster that can clone volumes:
// volumes are directories below a root, a clone is a copy, and a volume is published to
// a pod by a bind mount. It registers itself with the kubelet (the plugin registration
// service), so no node-driver-registrar is needed; the real external-provisioner does the
// provisioning and cloning against it.
package labcsi
