// Command apiserver-bridge forwards TCP connections from an address on the pod bridge to
// the API server on loopback, so that a pod reaches the API server as it does through
// the kubernetes Service in a cluster with a service proxy (this one has none): a pod
// told KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT of the bridge address (the
// Helm-installed web node of the e2e suite) talks to it with its service account's
// token, verified by the API server's certificate, which names the bridge address.
//
//	apiserver-bridge -listen 10.88.0.1:6443 -to 127.0.0.1:6443
package main

import (
	"flag"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	listen := flag.String("listen", "", "the address to accept connections on")
	to := flag.String("to", "127.0.0.1:6443", "the address to forward them to")
	flag.Parse()
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		<-sig
		os.Exit(0)
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go forward(c, *to)
	}
}

// forward copies c to a new connection to addr and back, until either side closes.
func forward(c net.Conn, addr string) {
	defer c.Close()
	up, err := net.Dial("tcp", addr)
	if err != nil {
		log.Printf("dialing %s for %s: %v", addr, c.RemoteAddr(), err)
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}
