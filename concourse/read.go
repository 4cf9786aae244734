package concourse

import (
	"fmt"
	"io"
)

// ReadConfig reads a pipeline, task or vars file from r, named file in diagnostics. It
// reads no more than one byte past the loader's limit for a file: a larger one (or one
// that never ends, as /dev/zero or a stream) is refused at the place it went over the
// limit, before it takes more time or memory than a file the loader takes.
func ReadConfig(file string, r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(data) > maxFileBytes {
		return nil, Diagnostic{File: file, Pos: posAt(data, maxFileBytes),
			Message: fmt.Sprintf("the file is over the loader's limit of %s for a file (reached here): it is read no further", byteSize(maxFileBytes))}
	}
	return data, nil
}
