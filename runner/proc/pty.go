package proc

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// ttySize is the size of a task's terminal in Concourse.
const ttyRows, ttyCols = 500, 500

// openPTY opens a pseudo-terminal pair of ttyRows×ttyCols whose output is not
// post-processed, so that the log holds the lines as the program wrote them ("\n", not
// "\r\n"), while the program still sees a terminal.
func openPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening a terminal: %w", err)
	}
	fail := func(what string, err error) (*os.File, *os.File, error) {
		master.Close()
		return nil, nil, fmt.Errorf("opening a terminal: %s: %w", what, err)
	}
	var unlock int32
	if err := ioctl(master, syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); err != nil {
		return fail("unlocking", err)
	}
	var n uint32
	if err := ioctl(master, syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); err != nil {
		return fail("numbering", err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fail("opening the slave", err)
	}
	ws := struct{ rows, cols, x, y uint16 }{ttyRows, ttyCols, 0, 0}
	if err := ioctl(slave, syscall.TIOCSWINSZ, uintptr(unsafe.Pointer(&ws))); err != nil {
		slave.Close()
		return fail("sizing", err)
	}
	var tio syscall.Termios
	if err := ioctl(slave, syscall.TCGETS, uintptr(unsafe.Pointer(&tio))); err != nil {
		slave.Close()
		return fail("reading modes", err)
	}
	tio.Oflag &^= syscall.OPOST
	if err := ioctl(slave, syscall.TCSETS, uintptr(unsafe.Pointer(&tio))); err != nil {
		slave.Close()
		return fail("setting modes", err)
	}
	return master, slave, nil
}

func ioctl(f *os.File, req, arg uintptr) error {
	conn, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := conn.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, req, arg)
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}
