package runspec

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

// TestSessionFrames: what a serving runner writes on its streams arrives on the same
// streams, in order, however large, and its exit status ends the answer.
func TestSessionFrames(t *testing.T) {
	var conn bytes.Buffer
	f := NewSessionFrameWriter(&conn)
	big := strings.Repeat("x", 3*maxSessionFrame+7)
	f.Stream(FrameStderr).Write([]byte("line 1\n"))
	f.Stream(FrameStdout).Write([]byte(big))
	f.Stream(FrameStderr).Write([]byte("line 2\n"))
	f.Exit(3)
	var stdout, stderr bytes.Buffer
	code, err := ReadSessionFrames(&conn, &stdout, &stderr)
	if err != nil || code != 3 {
		t.Fatalf("exit %d, %v; want 3", code, err)
	}
	if stdout.String() != big || stderr.String() != "line 1\nline 2\n" {
		t.Errorf("stdout of %d bytes, stderr %q", stdout.Len(), stderr.String())
	}
}

// TestSessionFramesBroken: an answer cut short, a frame of no kind or one too large is an
// error, never a result.
func TestSessionFramesBroken(t *testing.T) {
	var whole bytes.Buffer
	f := NewSessionFrameWriter(&whole)
	f.Stream(FrameStdout).Write([]byte("result"))
	f.Exit(0)
	for name, answer := range map[string][]byte{
		"cut":       whole.Bytes()[:whole.Len()-3],
		"no exit":   whole.Bytes()[:11],
		"kind":      append([]byte{'?', 0, 0, 0, 1, 'x'}, whole.Bytes()...),
		"too large": {'o', 0xff, 0xff, 0xff, 0xff},
		"status":    {'x', 0, 0, 0, 2, 'n', 'o'},
	} {
		if code, err := ReadSessionFrames(bytes.NewReader(answer), &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("%s: exit %d; want an error", name, code)
		}
	}
}

// TestSessionHello: the token a client gives is read back; a line of another protocol
// or too long is refused.
func TestSessionHello(t *testing.T) {
	tok, err := ReadSessionHello(bufio.NewReader(bytes.NewReader(append(SessionHello("abc"), []byte("{}\n")...))))
	if err != nil || tok != "abc" {
		t.Errorf("token %q, %v; want abc", tok, err)
	}
	for _, line := range []string{"GET / HTTP/1.1\r\n", strings.Repeat("a", 300) + "\n", "concourse-tekton-check/1 abc"} {
		if tok, err := ReadSessionHello(bufio.NewReader(strings.NewReader(line))); err == nil {
			t.Errorf("%.20q: token %q; want an error", line, tok)
		}
	}
}

// TestParseSessionKey: a key without its pin, its port or a long enough token is none.
func TestParseSessionKey(t *testing.T) {
	tok := strings.Repeat("a", 64)
	if _, err := ParseSessionKey([]byte(`{"port":7788,"pin":"p","token":"` + tok + `"}`)); err != nil {
		t.Errorf("a whole key: %v", err)
	}
	for _, k := range []string{`{"port":0,"pin":"p","token":"` + tok + `"}`, `{"port":7788,"token":"` + tok + `"}`, `{"port":7788,"pin":"p","token":"short"}`, `{`} {
		if _, err := ParseSessionKey([]byte(k)); err == nil {
			t.Errorf("%s: want an error", k)
		}
	}
}
