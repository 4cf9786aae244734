package tektonworker

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"code.cloudfoundry.org/lager/v3"
)

// ownUserListener accepts, on a loopback address, only the connections of processes of
// the listening process's user. The Garden API runs commands in builds' pods and, as a
// worker's Garden server, authenticates no one (a worker's is reached only from its own
// host, through the TSA's tunnel): on the web node's host, other users must not reach it.
// On another address, whoever the network lets through is accepted.
type ownUserListener struct {
	net.Listener
	uid    int
	logger lager.Logger
	// peerUID finds the user of a connection's other end (loopbackPeerUID).
	peerUID func(local, remote *net.TCPAddr) (int, error)
}

func newOwnUserListener(l net.Listener, logger lager.Logger) net.Listener {
	return &ownUserListener{Listener: l, uid: os.Getuid(), logger: logger, peerUID: loopbackPeerUID}
}

func (l *ownUserListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		local, lok := c.LocalAddr().(*net.TCPAddr)
		remote, rok := c.RemoteAddr().(*net.TCPAddr)
		if !lok || !rok || !local.IP.IsLoopback() {
			return c, nil
		}
		uid, err := l.peerUID(local, remote)
		if err == nil && uid == l.uid {
			return c, nil
		}
		l.logger.Info("refused-connection", lager.Data{"remote": remote.String(), "uid": uid, "error": fmt.Sprint(err)})
		c.Close()
	}
}

// loopbackPeerUID is the user owning the socket at the other end of a loopback TCP
// connection: the socket whose local address is remote and whose remote address is
// local, in the kernel's table of TCP sockets (/proc/net/tcp, tcp6).
func loopbackPeerUID(local, remote *net.TCPAddr) (int, error) {
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		uid, found, err := socketUID(table, procAddr(remote), procAddr(local))
		if err != nil {
			return -1, err
		}
		if found {
			return uid, nil
		}
	}
	return -1, errors.New("the connection's other end is not in the kernel's socket tables")
}

// socketUID finds, in a /proc/net/tcp table, the uid of the socket from local to remote.
func socketUID(table, local, remote string) (int, bool, error) {
	f, err := os.Open(table)
	if err != nil {
		return -1, false, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Scan() // the header
	for s.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid ...
		fields := strings.Fields(s.Text())
		if len(fields) < 8 || !strings.EqualFold(fields[1], local) || !strings.EqualFold(fields[2], remote) {
			continue
		}
		uid, err := strconv.Atoi(fields[7])
		return uid, err == nil, err
	}
	return -1, false, s.Err()
}

// procAddr is an address as /proc/net/tcp writes it: the IP as 32-bit words in the host's
// (little-endian) order, in hex, a colon and the port in hex. An IPv4 address is written
// as IPv4 in tcp, and as an IPv4-mapped IPv6 address in tcp6; it is looked up as the
// former (the Garden server listens on IPv4 unless told otherwise).
func procAddr(a *net.TCPAddr) string {
	ip := a.IP.To4()
	if ip == nil {
		ip = a.IP.To16()
	}
	var b strings.Builder
	for i := 0; i+4 <= len(ip); i += 4 {
		var w [4]byte
		binary.LittleEndian.PutUint32(w[:], binary.BigEndian.Uint32(ip[i:i+4]))
		b.WriteString(strings.ToUpper(hex.EncodeToString(w[:])))
	}
	return fmt.Sprintf("%s:%04X", b.String(), a.Port)
}
