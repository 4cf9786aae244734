//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The browser runs in a network namespace of its own, whose only interface is its
// loopback: Chromium aborts every request in flight when an interface of its namespace
// comes or goes (net::ERR_NETWORK_CHANGED), and on the host one does each time the
// cluster starts or ends a pod. The web node is reached through a relay that listens on
// the web node's own address inside the browser's namespace, so that every URL the web
// node gives (its external URL, the login's redirects) is the browser's too.

// inOwnNetwork makes the command start in a new network namespace.
func inOwnNetwork(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWNET
}

// relayInto brings up the loopback of the network namespace of process pid and listens
// there on target's host and port, forwarding each connection to target as this process
// reaches it. It returns a function that stops the relay.
func relayInto(pid int, target string) (stop func(), err error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	type result struct {
		l   net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		// The thread enters the browser's namespace and is never given back to the
		// runtime (no UnlockOSThread): it ends with this goroutine. The socket made on
		// it belongs to the browser's namespace for good, whichever thread accepts.
		runtime.LockOSThread()
		l, err := listenIn(pid, u.Host)
		done <- result{l, err}
	}()
	r := <-done
	if r.err != nil {
		return nil, fmt.Errorf("relaying %s into the browser's network namespace: %w", u.Host, r.err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := r.l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer in.Close()
				out, err := net.Dial("tcp", u.Host)
				if err != nil {
					return
				}
				defer out.Close()
				go func() {
					_, _ = io.Copy(out, in)
					_ = out.(*net.TCPConn).CloseWrite()
				}()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	return func() { _ = r.l.Close() }, nil
}

// listenIn moves the calling thread, locked to its goroutine, into the network namespace
// of process pid, brings its loopback up and listens on addr there.
func listenIn(pid int, addr string) (net.Listener, error) {
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("setns: %w", err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return nil, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return nil, fmt.Errorf("the loopback's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | uint16(unix.IFF_UP))
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return nil, fmt.Errorf("bringing the loopback up: %w", err)
	}
	return net.Listen("tcp", addr)
}
