// Command labcsi runs the e2e cluster's CSI driver (e2e/labcsi) on this node: it serves
// the CSI socket for the external-provisioner and the kubelet, and registers with the
// kubelet through its plugins_registry directory.
package main
