//go:build !unix

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
)

// handOver runs kube with args on this process's standard streams, and exits with its
// exit status. Interrupts reach kube, which shares the console; this process only waits.
func handOver(kube string, args []string) error {
	signal.Ignore(os.Interrupt)
	cmd := exec.Command(kube, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		os.Exit(exit.ExitCode())
	}
	if err != nil {
		return fmt.Errorf("running %s: %w", kube, err)
	}
	os.Exit(0)
	return nil
}
