package tektonworker

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
)

// TestProcAddr writes addresses as the kernel's socket tables do.
func TestProcAddr(t *testing.T) {
	for _, tc := range []struct {
		addr net.TCPAddr
		want string
	}{
		{net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 0x2811}, "0100007F:2811"},
		{net.TCPAddr{IP: net.ParseIP("10.88.0.1"), Port: 5000}, "0100580A:1388"},
		{net.TCPAddr{IP: net.ParseIP("::1"), Port: 80}, "00000000000000000000000001000000:0050"},
	} {
		if got := procAddr(&tc.addr); got != tc.want {
			t.Errorf("procAddr(%s) = %s, want %s", tc.addr.String(), got, tc.want)
		}
	}
}

// TestOwnUserListener accepts a connection of this process's user and, when the
// machine lets the test connect as another user (root), refuses that user's.
func TestOwnUserListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logger := lagertest.NewTestLogger("garden")
	l := newOwnUserListener(inner, logger)
	defer l.Close()
	port := strconv.Itoa(inner.Addr().(*net.TCPAddr).Port)

	if os.Getuid() == 0 {
		// A connection of nobody's (bash's /dev/tcp, which any machine with bash has),
		// held open until it is closed: connected, then refused before ours is accepted.
		nc := exec.Command("/bin/bash", "-c", `exec 3<>"/dev/tcp/127.0.0.1/$1" && read -r -u 3`, "bash", port)
		nc.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		if err := nc.Start(); err != nil {
			t.Fatalf("bash as nobody: %v", err)
		}
		defer func() { nc.Process.Kill(); nc.Wait() }()
	}
	// Later, every connection is another user's, as the socket tables say (set before
	// Accept runs: its goroutine reads it).
	var otherUser atomic.Bool
	lookup := l.(*ownUserListener).peerUID
	l.(*ownUserListener).peerUID = func(local, remote *net.TCPAddr) (int, error) {
		if otherUser.Load() {
			return os.Getuid() + 1, nil
		}
		return lookup(local, remote)
	}
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	if os.Getuid() == 0 {
		deadline := time.After(10 * time.Second)
		for len(logger.LogMessages()) == 0 {
			select {
			case c := <-accepted:
				t.Fatalf("accepted %s, another user's connection", c.RemoteAddr())
			case <-deadline:
				t.Fatal("nobody's connection was neither accepted nor refused")
			case <-time.After(10 * time.Millisecond):
			}
		}
		if msgs := logger.LogMessages(); msgs[0] != "garden.refused-connection" {
			t.Errorf("logged %v, want the refusal", msgs)
		}
	}
	ours, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer ours.Close()
	select {
	case c := <-accepted:
		if c.RemoteAddr().String() != ours.LocalAddr().String() {
			t.Errorf("accepted %s, want ours from %s", c.RemoteAddr(), ours.LocalAddr())
		}
		c.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("our own connection was not accepted")
	}

	// Another user's connection, as the socket tables say: closed.
	otherUser.Store(true)
	other, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := other.Read(make([]byte, 1)); err == nil {
		t.Error("another user's connection was kept open")
	}
	select {
	case c := <-accepted:
		t.Errorf("accepted %s", c.RemoteAddr())
	default:
	}
}
