//go:build unix

package main

import (
	"fmt"
	"os"
	"syscall"
)

// handOver replaces this process with kube running args: the same process ID, standard
// streams, signals and exit status. It returns only when that fails.
func handOver(kube string, args []string) error {
	err := syscall.Exec(kube, append([]string{kube}, args...), os.Environ())
	return fmt.Errorf("running %s: %w", kube, err)
}
