package engine

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/google/go-cmp/cmp"
)

// streamOutcomes returns n seeded outcomes over 5 s on 3 instances, with
// failures, timeouts, keys and requests that reached no instance.
func streamOutcomes(n int) []Outcome {
	rng := rand.New(rand.NewPCG(3, 4))
	out := make([]Outcome, n)
	for i := range out {
		o := Outcome{
			Instance: rng.IntN(4) - 1,
			SentAt:   time.Duration(rng.Int64N(int64(5 * time.Second))),
			Latency:  time.Duration(rng.ExpFloat64() * float64(20*time.Millisecond)),
			Success:  rng.IntN(10) > 0,
			Timeout:  rng.IntN(50) == 0,
		}
		if rng.IntN(2) == 0 {
			o.Key, o.HasKey = uint64(rng.IntN(20)), true
		}
		out[i] = o
	}
	return out
}

func newStreamCollector() *Collector {
	return NewCollector(3, 5*time.Second, time.Second, 50*time.Millisecond)
}

// writeStreams splits outcomes over gens generators' streams, as a run
// does (outcome k to generator k mod gens), and returns them.
func writeStreams(t *testing.T, outcomes []Outcome, gens int) []*bytes.Buffer {
	t.Helper()
	bufs := make([]*bytes.Buffer, gens)
	for g := range bufs {
		bufs[g] = new(bytes.Buffer)
		c := newStreamCollector()
		sw := NewStreamWriter(bufs[g], StreamHeader{Generator: g, Generators: gens, Instances: 3, Buckets: c.Buckets()})
		c.EmitBuckets(func(b int, hs, ok []*hdrhistogram.PackedHistogram) {
			if err := sw.Bucket(b, hs, ok); err != nil {
				t.Fatal(err)
			}
		})
		for k := g; k < len(outcomes); k += gens {
			c.Add(outcomes[k])
			c.RecordLag(time.Duration(k) * time.Microsecond)
		}
		c.Sweep(4 * time.Second) // some buckets go early, the rest at Finish
		c.Finish()
		if err := sw.End(c, NewEventLog(time.Time{}), GeneratorResult{Sent: int64(len(outcomes))}); err != nil {
			t.Fatal(err)
		}
	}
	return bufs
}

func TestStreamMergeEqualsOneCollector(t *testing.T) {
	outcomes := streamOutcomes(5000)
	one := newStreamCollector()
	for k, o := range outcomes {
		one.Add(o)
		one.RecordLag(time.Duration(k) * time.Microsecond)
	}
	one.Finish()
	want := one.Strategy("s", []int{1})
	for _, gens := range []int{1, 2, 3} {
		bufs := writeStreams(t, outcomes, gens)
		m := NewMerger(newStreamCollector(), gens)
		for g, b := range bufs {
			if err := m.Read(g, b, nil); err != nil {
				t.Fatalf("%d generators: generator %d: %v", gens, g, err)
			}
		}
		got, err := m.Measurement("s", []int{1})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got.Strategy); diff != "" {
			t.Errorf("%d generators merged differ from one collector (-one +merged):\n%s", gens, diff)
		}
	}
}

func TestStreamSurvivesForeignLines(t *testing.T) {
	buf := writeStreams(t, streamOutcomes(300), 1)[0]
	var mixed strings.Builder
	for i, line := range strings.SplitAfter(buf.String(), "\n") {
		if line == "" {
			continue
		}
		mixed.WriteString("some other log line\n")
		// As a container runtime's log might show it: a timestamp first.
		if i%2 == 0 {
			mixed.WriteString("2026-12-01T10:00:00.000000000Z stdout F ")
		}
		mixed.WriteString(strings.TrimSuffix(line, "\n") + "\r\n")
	}
	m := NewMerger(newStreamCollector(), 1)
	if err := m.Read(0, strings.NewReader(mixed.String()), nil); err != nil {
		t.Fatal(err)
	}
}

func TestStreamDamageDetected(t *testing.T) {
	lines := strings.SplitAfter(writeStreams(t, streamOutcomes(3000), 1)[0].String(), "\n")
	lines = lines[:len(lines)-1] // the empty string after the last newline
	if len(lines) < 4 {
		t.Fatalf("only %d lines", len(lines))
	}
	cases := []struct {
		name      string
		text      string
		truncated bool
	}{
		{"empty", "", true},
		{"no trailer", strings.Join(lines[:len(lines)-1], ""), true},
		{"cut in the middle", strings.Join(lines[:len(lines)/2], ""), true},
		{"a line lost", strings.Join(append(append([]string{}, lines[:2]...), lines[3:]...), ""), false},
		{"a line twice", strings.Join(append(append([]string{}, lines[:3]...), lines[2:]...), ""), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := NewMerger(newStreamCollector(), 1).Read(0, strings.NewReader(tc.text), nil)
			if err == nil {
				t.Fatal("damaged stream read without error")
			}
			if tc.truncated && !errors.Is(err, ErrTruncated) {
				t.Errorf("error %v, want ErrTruncated", err)
			}
		})
	}
}

func TestStreamWrongGenerator(t *testing.T) {
	bufs := writeStreams(t, streamOutcomes(100), 2)
	err := NewMerger(newStreamCollector(), 2).Read(0, bufs[1], nil)
	if err == nil || !strings.Contains(err.Error(), "generator 1 of 2") {
		t.Fatalf("error %v, want one naming the stream's generator", err)
	}
}

// TestMergedBehindIfAnyGeneratorWas: the merged run fell behind when any
// generator fell behind its share, even if the totals look on schedule,
// and a note names that generator.
func TestMergedBehindIfAnyGeneratorWas(t *testing.T) {
	m := NewMerger(newStreamCollector(), 2)
	for g, res := range []GeneratorResult{
		{Sent: 1000, Scheduled: 1000},
		{Sent: 985, Scheduled: 1000, Behind: true},
	} {
		var buf bytes.Buffer
		c := newStreamCollector()
		sw := NewStreamWriter(&buf, StreamHeader{Generator: g, Generators: 2, Instances: 3, Buckets: c.Buckets()})
		c.EmitBuckets(func(b int, hs, ok []*hdrhistogram.PackedHistogram) { _ = sw.Bucket(b, hs, ok) })
		c.Finish()
		if err := sw.End(c, NewEventLog(time.Time{}), res); err != nil {
			t.Fatal(err)
		}
		if err := m.Read(g, &buf, nil); err != nil {
			t.Fatal(err)
		}
	}
	got, err := m.Measurement("s", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !got.GeneratorBehind || got.Sent != 1985 || got.Scheduled != 2000 {
		t.Errorf("behind %v, sent %d of %d; want behind, 1985 of 2000", got.GeneratorBehind, got.Sent, got.Scheduled)
	}
	want := "s: generator 1 of 2 fell behind its share: 985 requests sent where its schedule had 1000."
	if len(got.Notes) != 1 || got.Notes[0] != want {
		t.Errorf("notes %q, want [%q]", got.Notes, want)
	}
}
