package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/concourse-tekton/concourse-tekton/e2e/labcsi"
)

func main() {
	name := flag.String("name", "labcsi.e2e.invalid", "CSI driver name")
	nodeID := flag.String("node-id", "", "this node's name")
	root := flag.String("root", "", "directory holding the volumes")
	csiSocket := flag.String("csi-socket", "", "CSI endpoint (unix socket path)")
	registry := flag.String("plugins-registry", "", "the kubelet's plugins_registry directory")
	flag.Parse()
	if *nodeID == "" || *root == "" || *csiSocket == "" || *registry == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := os.MkdirAll(*root, 0o755); err != nil {
		log.Fatalf("error: creating %s: %v", *root, err)
	}
	d := &labcsi.Driver{
		Name: *name, Version: "v1", NodeID: *nodeID, Root: *root, Endpoint: *csiSocket,
		Mounter: labcsi.SysMounter{}, Copy: labcsi.CopyWithCP,
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	reg := fmt.Sprintf("%s/%s-reg.sock", *registry, *name)
	log.Printf("labcsi %s serving %s, registering at %s", *name, *csiSocket, reg)
	if err := labcsi.Serve(ctx, d, *csiSocket, reg); err != nil {
		log.Fatalf("error: %v", err)
	}
}
