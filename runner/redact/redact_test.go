package redact

import (
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/internal/syncbuf"
)

func secrets(values ...any) *Secrets {
	s := &Secrets{}
	for _, v := range values {
		s.Add(v)
	}
	return s
}

func TestString(t *testing.T) {
	s := secrets(
		"hunter2",
		"x",
		"",
		"   ",
		"  line one \nline two\n\n",
		map[string]any{"user": "admin-user", "n": 3, "nested": map[string]any{"key": "s3cr3t"}},
		42,
		[]any{"in-a-list"},
		"hunter2-long",
		"abcd", "cdef",
	)
	tests := []struct{ name, in, want string }{
		{"secret", "password is hunter2", "password is ((redacted))"},
		{"one character is no secret", "x marks the spot", "x marks the spot"},
		{"every line of a value, trimmed", "line one, line two", "((redacted)), ((redacted))"},
		{"string values of maps", "admin-user:s3cr3t 3", "((redacted)):((redacted)) 3"},
		{"the longest match wins", "hunter2-long", "((redacted))"},
		{"the shorter one alone", "hunter2-short", "((redacted))-short"},
		{"overlapping secrets are hidden together", "xabcdefx", "x((redacted))x"},
		{"adjacent secrets are hidden apart", "hunter2hunter2", "((redacted))((redacted))"},
		{"other values are no secrets", "42 is not a secret", "42 is not a secret"},
		{"lists are not tracked", "in-a-list", "in-a-list"},
		{"no secret", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.String(tt.in); got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestEmptySecretsAreIgnored(t *testing.T) {
	s := secrets("", " \n\t", "x", "\ny\n", map[string]any{"k": ""}, nil)
	if !s.Empty() {
		t.Errorf("Empty() = false after adding only empty and one-character values")
	}
	var out strings.Builder
	w := &Writer{W: &out, Secrets: s}
	write(t, w, "x y  z")
	if out.String() != "x y  z" {
		t.Errorf("got %q", out.String())
	}
	var nilSecrets *Secrets
	if got := nilSecrets.String("text"); got != "text" {
		t.Errorf("nil Secrets: String = %q", got)
	}
}

func write(t *testing.T, w *Writer, chunks ...string) {
	t.Helper()
	for _, c := range chunks {
		n, err := w.Write([]byte(c))
		if err != nil || n != len(c) {
			t.Fatalf("Write(%q) = %d, %v", c, n, err)
		}
	}
}

func TestWriter(t *testing.T) {
	s := secrets("topsecret", "multi-line\n  secret value  \n", "hunter2", "hunter2-long", "abcd", "cdef")
	tests := []struct {
		name   string
		chunks []string
		want   string
	}{
		{"a secret split across writes", []string{"a top", "sec", "ret\nand top", "secret again"}, "a ((redacted))\nand ((redacted)) again"},
		{"one byte at a time", strings.Split("xtopsecretx", ""), "x((redacted))x"},
		{"a multi-line secret", []string{"multi-line\nsecret", " value\n"}, "((redacted))\n((redacted))\n"},
		{"the longest match wins across writes", []string{"hunter2", "-lo", "ng!"}, "((redacted))!"},
		{"the shorter one when the longer does not come", []string{"hunter2", "-lo", "st"}, "((redacted))-lost"},
		{"overlapping secrets across writes", []string{"ab", "cde", "f"}, "((redacted))"},
		{"a prefix that ends the output", []string{"the end: topsec"}, "the end: topsec"},
		{"no secret", []string{"plain ", "text\r", "more"}, "plain text\rmore"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			w := &Writer{W: &out, Secrets: s, Clock: &fakeClock{}}
			write(t, w, tt.chunks...)
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, out.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriterWithoutSecretsPassesThrough(t *testing.T) {
	var out strings.Builder
	w := &Writer{W: &out, Secrets: &Secrets{}}
	write(t, w, "progress 50%\r")
	if out.String() != "progress 50%\r" {
		t.Errorf("got %q", out.String())
	}
	w = &Writer{W: &out}
	write(t, w, "nil secrets")
	if out.String() != "progress 50%\rnil secrets" {
		t.Errorf("got %q", out.String())
	}
}

// fakeClock runs the functions scheduled on it when the test advances it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Duration
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Duration
	f       func()
	stopped bool
}

var _ Clock = (*fakeClock)(nil)

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now + d, f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	was := !t.stopped
	t.stopped = true
	return was
}

// advance moves the time on and runs, in the test's goroutine, what has come due.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now += d
	var due []*fakeTimer
	for _, t := range c.timers {
		if !t.stopped && t.at <= c.now {
			t.stopped = true
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

func TestWriterFlushesPromptly(t *testing.T) {
	const idle = 150 * time.Millisecond
	var out strings.Builder
	clock := &fakeClock{}
	w := &Writer{W: &out, Secrets: secrets("s3cr3t-token"), Idle: idle, Clock: clock}
	// Each step is a write (or the clock moving on) and everything the underlying
	// writer has received after it.
	steps := []struct {
		write   string
		advance time.Duration
		want    string
	}{
		{write: "\rdownloading 10%", want: "\rdownloading 10%"},
		{write: "\rdownloading 20% s", want: "\rdownloading 10%\rdownloading 20% "},
		{advance: idle - time.Millisecond, want: "\rdownloading 10%\rdownloading 20% "},
		{advance: time.Millisecond, want: "\rdownloading 10%\rdownloading 20% s"},
		{write: "\rstatus ok", want: "\rdownloading 10%\rdownloading 20% s\rstatus ok"},
		{write: " s3c", want: "\rdownloading 10%\rdownloading 20% s\rstatus ok "},
		{write: "r3t", want: "\rdownloading 10%\rdownloading 20% s\rstatus ok "},
		{advance: idle / 2, want: "\rdownloading 10%\rdownloading 20% s\rstatus ok "},
		// A write starts the idle time again.
		{write: "-tok", want: "\rdownloading 10%\rdownloading 20% s\rstatus ok "},
		{advance: idle / 2, want: "\rdownloading 10%\rdownloading 20% s\rstatus ok "},
		{write: "en fine\n", want: "\rdownloading 10%\rdownloading 20% s\rstatus ok ((redacted)) fine\n"},
		// The beginning of a secret flushed after the idle time: the rest is hidden.
		{write: "s3cr", want: "\rdownloading 10%\rdownloading 20% s\rstatus ok ((redacted)) fine\n"},
		{advance: idle, want: "\rdownloading 10%\rdownloading 20% s\rstatus ok ((redacted)) fine\ns3cr"},
		{write: "3t-token done", want: "\rdownloading 10%\rdownloading 20% s\rstatus ok ((redacted)) fine\ns3cr((redacted)) done"},
		{advance: 10 * idle, want: "\rdownloading 10%\rdownloading 20% s\rstatus ok ((redacted)) fine\ns3cr((redacted)) done"},
	}
	for i, st := range steps {
		if st.write != "" {
			write(t, w, st.write)
		}
		clock.advance(st.advance)
		if diff := cmp.Diff(st.want, out.String()); diff != "" {
			t.Fatalf("after step %d (write %q, advance %v) (-want +got):\n%s", i, st.write, st.advance, diff)
		}
	}
}

func TestWriterTakesNewSecrets(t *testing.T) {
	var out strings.Builder
	s := secrets("abcdef")
	w := &Writer{W: &out, Secrets: s, Clock: &fakeClock{}}
	write(t, w, "xx abc")
	if out.String() != "xx " {
		t.Fatalf("got %q", out.String())
	}
	s.Add("abcxyz")
	write(t, w, "xyz, xyz")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("xx ((redacted)), xyz", out.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriterErrors(t *testing.T) {
	clock := &fakeClock{}
	w := &Writer{W: failingWriter{}, Secrets: secrets("secret"), Clock: clock}
	if _, err := w.Write([]byte("a")); err == nil {
		t.Errorf("Write: no error")
	}
	if _, err := w.Write([]byte("sec")); err != nil {
		t.Errorf("Write of a held-back tail: %v", err)
	}
	clock.advance(DefaultIdle)
	if err := w.Flush(); err == nil {
		t.Errorf("Flush after a failed idle flush: no error")
	}
}

// TestWriterHoldsNoLine writes a 4 MiB line in pieces: all of it but a possible beginning
// of the secret is written at once, and the memory held stays small.
func TestWriterHoldsNoLine(t *testing.T) {
	const secret = "hunter2-password"
	var out counter
	w := &Writer{W: &out, Secrets: secrets(secret), Clock: &fakeClock{}}
	piece := []byte(strings.Repeat("hunter hunter2-pass ", 200) + "hunter2-passwor")
	for fed := 0; fed < 4<<20; fed += len(piece) {
		write(t, w, string(piece))
		if held := fed + len(piece) - out.n; held > len(secret)-1 {
			t.Fatalf("%d bytes held back after %d", held, fed+len(piece))
		}
		if c := cap(w.st.raw); c > 4*len(secret) {
			t.Fatalf("a buffer of %d bytes for a secret of %d", c, len(secret))
		}
	}
}

type counter struct{ n int }

func (c *counter) Write(p []byte) (int, error) {
	c.n += len(p)
	return len(p), nil
}

// reference redacts text the obvious way: every occurrence of every secret, the
// overlapping ones merged, each group replaced by Redacted.
func reference(lines []string, text string) string {
	var spans []span
	for _, l := range lines {
		for i := 0; i+len(l) <= len(text); i++ {
			if text[i:i+len(l)] == l {
				spans = append(spans, span{int64(i), int64(i + len(l))})
			}
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	var b strings.Builder
	at := int64(0)
	for i := 0; i < len(spans); {
		start, end := spans[i].start, spans[i].end
		for i++; i < len(spans) && spans[i].start < end; i++ {
			end = max(end, spans[i].end)
		}
		b.WriteString(text[at:start])
		b.WriteString(Redacted)
		at = end
	}
	b.WriteString(text[at:])
	return b.String()
}

// TestWriterRandom compares the writer, fed in random pieces, with the reference, and
// checks after every write that only a possible beginning of a secret is held back.
func TestWriterRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	word := func(alphabet string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.Intn(len(alphabet))]
		}
		return string(b)
	}
	for round := 0; round < 2000; round++ {
		alphabet := "abc"[:2+rng.Intn(2)]
		var lines []string
		s := &Secrets{}
		for range 1 + rng.Intn(5) {
			l := word(alphabet, 2+rng.Intn(6))
			s.Add(l)
			lines = append(lines, l)
		}
		longest := 0
		for _, l := range lines {
			longest = max(longest, len(l))
		}
		text := word(alphabet+"\n", rng.Intn(120))
		want := reference(lines, text)
		if got := s.String(text); got != want {
			t.Fatalf("secrets %q: String(%q) = %q, want %q", lines, text, got, want)
		}
		var out strings.Builder
		w := &Writer{W: &out, Secrets: s, Clock: &fakeClock{}}
		for fed := 0; fed < len(text); {
			n := min(len(text)-fed, 1+rng.Intn(10))
			write(t, w, text[fed:fed+n])
			fed += n
			held := text[w.st.done:fed]
			if len(held) > longest-1 {
				t.Fatalf("secrets %q, text %q: %d bytes held back after %d", lines, text, len(held), fed)
			}
			if held != "" && !couldStartSecret(lines, text[:fed], int(w.st.done)) {
				t.Fatalf("secrets %q, text %q: %q held back after %d, which no secret can cover", lines, text, held, fed)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Fatalf("secrets %q: writing %q gave %q, want %q", lines, text, out.String(), want)
		}
	}
}

// couldStartSecret tells whether a secret could still cover the byte at held: text from
// some j <= held on is the beginning of a secret.
func couldStartSecret(lines []string, text string, held int) bool {
	for j := held; j >= 0; j-- {
		for _, l := range lines {
			if len(text)-j < len(l) && strings.HasPrefix(l, text[j:]) {
				return true
			}
		}
	}
	return false
}

// FuzzWriter checks the writer against the reference: secrets are the lines of lines,
// and cuts says where the text is cut into writes.
func FuzzWriter(f *testing.F) {
	f.Add("abcd\ncdef\nhunter2", "xx abcdef hunter2 hunter", []byte{3, 1, 7})
	f.Add("aa\naab", "aaaaab", []byte{1})
	f.Fuzz(func(t *testing.T, lines, text string, cuts []byte) {
		s := &Secrets{}
		s.Add(lines)
		var tracked []string
		for l := range s.lines {
			tracked = append(tracked, l)
		}
		want := reference(tracked, text)
		var out strings.Builder
		w := &Writer{W: &out, Secrets: s, Clock: &fakeClock{}}
		rest := text
		for _, c := range cuts {
			n := min(len(rest), int(c))
			write(t, w, rest[:n])
			rest = rest[n:]
		}
		write(t, w, rest)
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("secrets %q: writing %q gave %q, want %q", tracked, text, out.String(), want)
		}
	})
}

// TestWriterConcurrentWithTimers runs the idle flush on real timers beside concurrent
// writes (for the race detector): everything ends up written, nothing twice.
func TestWriterConcurrentWithTimers(t *testing.T) {
	var out syncbuf.Buffer
	w := &Writer{W: &out, Secrets: secrets("needle-secret"), Idle: time.Millisecond}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				w.Write([]byte("n"))
				time.Sleep(100 * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for out.String() != strings.Repeat("n", 200) {
		if time.Now().After(deadline) {
			t.Fatalf("after the idle time: %q", out.String())
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkRedact writes one line of size bytes (no newline: a progress bar, a base64
// dump) in 4 KiB writes, as they come from a terminal, with no secret, a few, or many.
// Linear redaction takes the same time per byte whatever the size.
func BenchmarkRedact(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	var many []any
	for range 1000 {
		many = append(many, fmt.Sprintf("tok-%016x", rng.Uint64()))
	}
	sets := []struct {
		name   string
		values []any
	}{
		{"secrets=0", nil},
		{"secrets=3", []any{"hunter2-password", "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END KEY-----", "deploy-token-0123456789"}},
		{"secrets=1000", many},
	}
	for _, size := range []int{1 << 20, 4 << 20, 16 << 20} {
		text := benchText(rng, size, "hunter2-password")
		for _, set := range sets {
			b.Run(fmt.Sprintf("%s/size=%dMiB", set.name, size>>20), func(b *testing.B) {
				s, out := secrets(set.values...), &sink{}
				b.SetBytes(int64(size))
				for b.Loop() {
					w := &Writer{W: out, Secrets: s}
					for p := text; len(p) > 0; {
						n := min(len(p), 4096)
						w.Write(p[:n])
						p = p[n:]
					}
					w.Flush()
				}
			})
		}
	}
}

// sink stands for the pipe the runner writes its log to: it copies what it is given.
type sink struct{ buf [64 << 10]byte }

func (s *sink) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		rest = rest[copy(s.buf[:], rest):]
	}
	return len(p), nil
}

// benchText is size bytes of words without a newline, with secret every 64 KiB.
func benchText(rng *rand.Rand, size int, secret string) []byte {
	words := strings.Fields("the quick brown fox jumps over a lazy dog downloading layer sha256 done 42% token hunter deploy")
	text := make([]byte, 0, size+64)
	for len(text) < size {
		if len(text)%(64<<10) < 16 {
			text = append(text, secret...)
		}
		text = append(text, words[rng.Intn(len(words))]...)
		text = append(text, ' ')
	}
	return text[:size]
}
