package cli

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// progress reports a transfer that takes longer than a second: a line a second on stderr
// with the bytes moved and the rate, then one when it is done. A quick transfer says
// nothing.
type progress struct {
	out        io.Writer
	verb, name string
	start      time.Time
	bytes      atomic.Int64
	stop       chan struct{}
	once       sync.Once
	mu         sync.Mutex
	spoke      bool // a line was printed
	ended      bool // the last line was printed
}

// progressEvery is how often a transfer says how it goes.
var progressEvery = time.Second

func newProgress(out io.Writer, verb, name string) *progress {
	p := &progress{out: out, verb: verb, name: name, start: time.Now(), stop: make(chan struct{})}
	go p.tick(progressEvery)
	return p
}

func (p *progress) tick(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.say(false, fmt.Sprintf("%s %s: %s", p.verb, p.name, p.rate()))
		}
	}
}

// say prints a line; a tick's (last false) only before the last line.
func (p *progress) say(last bool, line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	fmt.Fprintln(p.out, line)
	p.spoke, p.ended = true, last
}

// rate is "12.0 MiB (6.0 MiB/s)".
func (p *progress) rate() string {
	n := p.bytes.Load()
	secs := time.Since(p.start).Seconds()
	if secs <= 0 {
		secs = 1e-9
	}
	return fmt.Sprintf("%s (%s/s)", byteCount(float64(n)), byteCount(float64(n)/secs))
}

// done ends the reports; after any, one says how it ended.
func (p *progress) done(err error) {
	p.once.Do(func() {
		close(p.stop)
		p.mu.Lock()
		spoke := p.spoke
		p.mu.Unlock()
		if !spoke {
			return
		}
		if err != nil {
			p.say(true, fmt.Sprintf("%s %s failed after %s", p.verb, p.name, byteCount(float64(p.bytes.Load()))))
			return
		}
		p.say(true, fmt.Sprintf("%s %s: done, %s in %s", p.verb, p.name, p.rate(), time.Since(p.start).Round(100*time.Millisecond)))
	})
}

// writer counts what goes through w.
func (p *progress) writer(w io.Writer) io.Writer { return countingWriter{w, p} }

type countingWriter struct {
	w io.Writer
	p *progress
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.p.bytes.Add(int64(n))
	return n, err
}

// byteCount is n in B, KiB, MiB or GiB.
func byteCount(n float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f %s", n, units[i])
	}
	return fmt.Sprintf("%.1f %s", n, units[i])
}
