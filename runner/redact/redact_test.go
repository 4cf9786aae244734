package redact

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestString(t *testing.T) {
	var s Secrets
	s.Add("hunter2")
	s.Add("x")
	s.Add("  line one \nline two\n\n")
	s.Add(map[string]any{"user": "admin-user", "n": 3, "nested": map[string]any{"key": "s3cr3t"}})
	s.Add(42)
	s.Add("hunter2-long")
	tests := []struct{ in, want string }{
		{"password is hunter2", "password is ((redacted))"},
		{"x marks the spot", "x marks the spot"},
		{"line one, line two", "((redacted)), ((redacted))"},
		{"admin-user:s3cr3t 3", "((redacted)):((redacted)) 3"},
		{"hunter2-long", "((redacted))"},
		{"42 is not a secret", "42 is not a secret"},
	}
	for _, tt := range tests {
		if got := s.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWriterHoldsPartialLines(t *testing.T) {
	var s Secrets
	s.Add("topsecret")
	var out strings.Builder
	w := &Writer{W: &out, Secrets: &s}
	for _, chunk := range []string{"a top", "secret\nand top", "sec", "ret again"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff("a ((redacted))\n", out.String()); diff != "" {
		t.Errorf("before flush (-want +got):\n%s", diff)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("a ((redacted))\nand ((redacted)) again", out.String()); diff != "" {
		t.Errorf("after flush (-want +got):\n%s", diff)
	}
}

func TestWriterWithoutSecretsPassesThrough(t *testing.T) {
	var out strings.Builder
	w := &Writer{W: &out, Secrets: &Secrets{}}
	if _, err := w.Write([]byte("progress 50%\r")); err != nil {
		t.Fatal(err)
	}
	if out.String() != "progress 50%\r" {
		t.Errorf("got %q", out.String())
	}
}
