package buildevents

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"time"
)

// LogLine is one line of a container's log (with its newline, if it had one).
type LogLine struct {
	Time time.Time
	Text string
}

// LogReader reads one container's log from the streams the API gives of it, each line
// prefixed with its RFC 3339 timestamp (kubectl logs --timestamps). A stream that broke
// (a dropped connection, an apiserver restart) is opened again from the second of the
// last line kept (Since), and the lines already kept are skipped by their timestamps: no
// line is lost or kept twice, so the n-th line is the same line in every process.
type LogReader struct {
	// last is the timestamp of the last line kept, and atLast how many kept lines have it.
	last   time.Time
	atLast int
}

// Since is the second from which the next stream is to be read: zero, from the start.
func (r *LogReader) Since() time.Time {
	return r.last.Truncate(time.Second)
}

// Read hands keep the stream's lines that were not kept yet, in order. A last line
// without its newline is kept only when the stream is of an ended container and reached
// its end: any other stream may have been cut in the middle of the line (an apiserver
// restart, a dropped connection, a follow stream closed as the container ended), and the
// next stream, opened from that line's second, brings it whole.
func (r *LogReader) Read(stream io.Reader, ended bool, keep func(LogLine)) error {
	br := bufio.NewReaderSize(stream, 64<<10)
	skipAtLast := r.atLast
	for {
		line, err := br.ReadString('\n')
		if line != "" && !strings.HasSuffix(line, "\n") && !(ended && errors.Is(err, io.EOF)) {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if line != "" {
			l := ParseLogLine(line)
			switch {
			case !r.last.IsZero() && l.Time.Before(r.last):
			case !r.last.IsZero() && l.Time.Equal(r.last) && skipAtLast > 0:
				skipAtLast--
			default:
				if l.Time.Equal(r.last) {
					r.atLast++
				} else if l.Time.After(r.last) {
					r.last, r.atLast = l.Time, 1
				}
				keep(l)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// ParseLogLine reads one line of a stream of the API (kubectl logs --timestamps): its
// timestamp cut off, and none when it has none.
func ParseLogLine(line string) LogLine {
	stamp, text, ok := strings.Cut(line, " ")
	if !ok {
		// A line that is only a timestamp is an empty line without its newline.
		if ts, err := time.Parse(time.RFC3339Nano, strings.TrimSuffix(line, "\n")); err == nil {
			return LogLine{Time: ts}
		}
		return LogLine{Text: line}
	}
	ts, err := time.Parse(time.RFC3339Nano, stamp)
	if err != nil {
		return LogLine{Text: line}
	}
	return LogLine{Time: ts, Text: text}
}
