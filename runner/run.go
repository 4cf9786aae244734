package runner

import (
	"context"
	"fmt"
)

// runRun is a prototype's run step as Concourse 7 runs it (exec.RunStep), which has not
// implemented prototypes: it says so, pretends, and succeeds.
func runRun(_ context.Context, s *step) (bool, error) {
	r := s.spec.Run
	fmt.Fprint(s.stderr, "\x1b[1;33mthe run step is not yet implemented\x1b[0m\n\n")
	fmt.Fprintf(s.stderr, "\x1b[1;34mpretending to run %s on prototype %s...\x1b[0m\n", r.Message, r.Type)
	return true, nil
}
