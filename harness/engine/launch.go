package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// A Launcher starts the generators of a distributed run (generators: N):
// N copies of `lbchaos generate`, as local processes or as the pods of a
// Kubernetes Indexed Job, each writing its stream (the generator's encoded
// results) to its standard output, which the coordinator reads and merges.
type Launcher interface {
	// Name says where the generators run, for the run's log ("local
	// processes", "Kubernetes Job lbchaos-gen-3").
	Name() string
	// Lead is how long before the shared start the generators must be
	// launched: time for each to start and get ready.
	Lead() time.Duration
	// Launch starts spec.N generators. It returns once each has been
	// started (not necessarily once each is ready); on error it has
	// stopped those it started. When ctx is done, every generator is
	// interrupted: it ends its stream with what it measured.
	Launch(ctx context.Context, spec LaunchSpec) ([]Generator, error)
}

// LaunchSpec is what every generator of one strategy's attack runs.
type LaunchSpec struct {
	N int
	// Args are `lbchaos generate`'s arguments (after "generate") but for
	// --generator, which the launcher gives each (0 to N-1), and
	// --experiment, through which it hands over Experiment.
	Args []string
	// Experiment is the experiment file as run.
	Experiment []byte
	// Grace bounds how long an interrupted generator may take to end its
	// stream before it is killed.
	Grace time.Duration
	// Log receives the generators' progress and errors, each line
	// prefixed with its generator's index.
	Log io.Writer
}

// Generator is one launched generator.
type Generator interface {
	// Stream is its standard output: its encoded results (Merger.Read).
	Stream() io.Reader
	// Wait waits for it to end, after its stream was read to its end
	// with error rerr, and returns an error naming it when it failed or
	// its stream was incomplete (rerr != nil).
	Wait(rerr error) error
}

// GeneratorLog is what a launcher does with a generator's progress and
// errors (its standard error, or the lines of its pod's log that are not
// its stream): each line goes to the run's log prefixed with the
// generator's index, and the last one is kept for the error that names a
// failed generator.
type GeneratorLog struct {
	mu      sync.Mutex
	w       io.Writer
	prefix  string
	partial []byte
	line    string
}

// NewGeneratorLog returns the log of generator g, writing to w.
func NewGeneratorLog(w io.Writer, g int) *GeneratorLog {
	return &GeneratorLog{w: w, prefix: fmt.Sprintf("      generator %d: ", g)}
}

// Write implements io.Writer; lines may arrive in any pieces.
func (l *GeneratorLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSuffix(string(l.partial[:i]), "\r")
		l.partial = l.partial[i+1:]
		if strings.TrimSpace(line) != "" {
			l.line = strings.TrimSpace(line)
			if l.w != nil {
				fmt.Fprintf(l.w, "%s%s\n", l.prefix, line)
			}
		}
	}
	return len(p), nil
}

// Last returns the last line written: the one not ended yet, if any.
func (l *GeneratorLog) Last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := strings.TrimSpace(string(l.partial)); s != "" {
		return s
	}
	return l.line
}
