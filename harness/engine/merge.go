package engine

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lbchaos/lbchaos/reports"
)

// Merger merges the streams of a distributed run's generators into one
// Collector, exactly: histograms through HdrHistogram's own Merge, counters
// summed, per-second buckets aligned by their index on the shared start.
// The merged collector then gives the summary a single process gives.
// Memory stays bounded as a single collector's: a second's merged
// histograms are reduced to percentiles once every generator has sent
// them. Read may run concurrently, one call per generator.
type Merger struct {
	// Immutable after NewMerger.
	coll *Collector
	gens int

	mu      sync.Mutex
	through []int              // per generator: the buckets below it have arrived
	results []*GeneratorResult // per generator: nil until its end frame
	events  []loggedEvent
	late    []time.Duration // per generator: how late it was ready
	prog    []GeneratorProgress
}

// NewMerger merges gens generators' streams into coll, a fresh collector
// of the run's geometry (instances, duration, timeout, slow threshold).
func NewMerger(coll *Collector, gens int) *Merger {
	return &Merger{coll: coll, gens: gens, through: make([]int, gens), results: make([]*GeneratorResult, gens), late: make([]time.Duration, gens), prog: make([]GeneratorProgress, gens)}
}

// Read decodes generator gen's stream from r and merges it; raw, when not
// nil, receives the raw results the stream carries, in order. It returns
// nil only for a complete stream (see StreamPrefix).
func (m *Merger) Read(gen int, r io.Reader, raw io.Writer) error {
	if gen < 0 || gen >= m.gens {
		return fmt.Errorf("generator %d of %d", gen, m.gens)
	}
	return readStream(r, func(kind byte, payload []byte) error {
		switch kind {
		case frameHeader:
			var h StreamHeader
			if err := decodeFrame(payload, &h); err != nil {
				return fmt.Errorf("header: %w", err)
			}
			return m.header(gen, h)
		case frameBucket:
			var b bucketFrame
			if err := decodeFrame(payload, &b); err != nil {
				return fmt.Errorf("bucket: %w", err)
			}
			return m.bucket(gen, b)
		case frameRaw:
			var p []byte
			if err := decodeFrame(payload, &p); err != nil {
				return fmt.Errorf("raw results: %w", err)
			}
			if raw != nil {
				if _, err := raw.Write(p); err != nil {
					return fmt.Errorf("raw results: %w", err)
				}
			}
			return nil
		case frameProgress:
			var p GeneratorProgress
			if err := decodeFrame(payload, &p); err != nil {
				return fmt.Errorf("progress: %w", err)
			}
			m.mu.Lock()
			m.prog[gen] = p
			m.mu.Unlock()
			return nil
		case frameEnd:
			var e endFrame
			if err := decodeFrame(payload, &e); err != nil {
				return fmt.Errorf("end: %w", err)
			}
			return m.end(gen, e)
		default:
			return fmt.Errorf("unknown frame kind %d", kind)
		}
	})
}

func (m *Merger) header(gen int, h StreamHeader) error {
	c := m.coll
	switch {
	case h.Version != streamVersion:
		return fmt.Errorf("stream version %d, want %d (is the generator the same lbchaos?)", h.Version, streamVersion)
	case h.Generator != gen || h.Generators != m.gens:
		return fmt.Errorf("the stream is generator %d of %d's, want %d of %d", h.Generator, h.Generators, gen, m.gens)
	case h.Instances != c.instances || h.Buckets != len(c.series[0].Requests):
		return fmt.Errorf("the stream has %d instances and %d seconds, the run %d and %d", h.Instances, h.Buckets, c.instances, len(c.series[0].Requests))
	}
	m.mu.Lock()
	m.late[gen] = h.Late
	m.mu.Unlock()
	return nil
}

func (m *Merger) bucket(gen int, f bucketFrame) error {
	hists, err := decodePackedList(f.Bucket, f.Instances, f.Hists)
	if err != nil {
		return err
	}
	okHists, err := decodePackedList(f.Bucket, f.OKInstances, f.OKHists)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if f.Bucket != m.through[gen] {
		return fmt.Errorf("bucket %d out of order: want %d", f.Bucket, m.through[gen])
	}
	for i, h := range hists {
		if err := m.coll.mergeBucket(m.coll.open, f.Bucket, f.Instances[i], h); err != nil {
			return err
		}
	}
	for i, h := range okHists {
		if err := m.coll.mergeBucket(m.coll.openOK, f.Bucket, f.OKInstances[i], h); err != nil {
			return err
		}
		m.coll.okSeries = true
	}
	m.through[gen]++
	m.coll.reduceBefore(slices.Min(m.through))
	return nil
}

func (m *Merger) end(gen int, e endFrame) error {
	if err := m.coll.mergeTotals(&e.Totals); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.results[gen] != nil {
		return fmt.Errorf("a second end frame")
	}
	r := e.Result
	m.results[gen] = &r
	for _, ev := range e.Events {
		m.events = append(m.events, loggedEvent{replica: ev.Replica, seq: ev.Seq})
		le := &m.events[len(m.events)-1]
		le.TimeS, le.Instance, le.Kind, le.Detail = ev.TimeS, ev.Instance, ev.Kind, ev.Detail
	}
	return nil
}

// Progress sums the generators' latest progress.
func (m *Merger) Progress() GeneratorProgress {
	m.mu.Lock()
	defer m.mu.Unlock()
	var sum GeneratorProgress
	for _, p := range m.prog {
		sum.Results += p.Results
		sum.Errors += p.Errors
		sum.InFlight += p.InFlight
	}
	return sum
}

// Unnamed returns the generators' results of a proxy strategy that no
// instance was named for (GeneratorResult.Unnamed), once every stream is
// read.
func (m *Merger) Unnamed() []SeqOutcome {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []SeqOutcome
	for _, r := range m.results {
		if r != nil {
			out = append(out, r.Unnamed...)
		}
	}
	return out
}

// Late returns how late each generator was ready to send, after the shared
// start (0 when in time).
func (m *Merger) Late() []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.late)
}

// Measurement finishes the merged collector and returns the run's
// measurement of strategy name: the collector's view with faulty
// instances, and the generators' counters combined (sent, scheduled,
// ejections and caps summed; behind and interrupted if any was). Events
// are ordered as a single process orders them; beyond MaxEvents the
// earliest are kept. Every stream must have been read without error.
func (m *Merger) Measurement(name string, faulty []int) (*Measurement, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for g, r := range m.results {
		if r == nil {
			return nil, fmt.Errorf("generator %d: no results", g)
		}
	}
	m.coll.Finish()
	out := &Measurement{}
	var behind bool
	for _, r := range m.results {
		out.Sent += r.Sent
		out.Scheduled += r.Scheduled
		behind = behind || r.Behind
		out.Elapsed = max(out.Elapsed, r.Elapsed)
		out.Interrupted = out.Interrupted || r.Interrupted
		out.Ejections += r.Ejections
		out.Retry = addRetryStats(out.Retry, r.Retry)
		out.EventDrops += r.EventDrops
		out.CapHits += r.CapHits
		out.ConnBound = max(out.ConnBound, r.ConnBound)
		out.Notes = append(out.Notes, r.Notes...)
	}
	out.GeneratorBehind = behind
	for g, r := range m.results {
		if r.Behind {
			out.Notes = append(out.Notes, fmt.Sprintf("%s: generator %d of %d fell behind its share: %d requests sent where its schedule had %d.", name, g, m.gens, r.Sent, r.Scheduled))
		}
	}
	sortEvents(m.events)
	if len(m.events) > MaxEvents {
		out.EventDrops += len(m.events) - MaxEvents
		m.events = m.events[:MaxEvents]
	}
	out.Events = make([]reports.Event, len(m.events))
	for i, e := range m.events {
		out.Events[i] = e.Event
	}
	out.Strategy = m.coll.Strategy(name, faulty)
	out.Aborted, out.Unattributed = m.coll.Aborted(), m.coll.Unattributed()
	return out, nil
}

// decodePackedList decodes a bucket frame's histograms.
func decodePackedList(bucket int, instances []int, raw [][]byte) ([]*hdrhistogram.PackedHistogram, error) {
	if len(instances) != len(raw) {
		return nil, fmt.Errorf("bucket %d: %d instances, %d histograms", bucket, len(instances), len(raw))
	}
	hists := make([]*hdrhistogram.PackedHistogram, len(raw))
	for i, b := range raw {
		h, err := decodePacked(b)
		if err != nil {
			return nil, fmt.Errorf("bucket %d, instance %d: %w", bucket, instances[i], err)
		}
		hists[i] = h
	}
	return hists, nil
}

// mergeBucket adds h to bucket b of instance inst in open (c.open or
// c.openOK).
func (c *Collector) mergeBucket(open map[int][]*hdrhistogram.PackedHistogram, b, inst int, h *hdrhistogram.PackedHistogram) error {
	if inst < 0 || inst >= c.instances || b < 0 || b >= len(c.series[0].Requests) {
		return fmt.Errorf("bucket %d, instance %d: out of range", b, inst)
	}
	if b < c.finalized {
		c.late += h.TotalCount()
		return nil
	}
	hs := open[b]
	if hs == nil {
		hs = make([]*hdrhistogram.PackedHistogram, c.instances)
		open[b] = hs
	}
	if hs[inst] == nil {
		hs[inst] = newPacked()
	}
	if d := hs[inst].Merge(h); d > 0 {
		return fmt.Errorf("bucket %d, instance %d: %d values outside the histogram's range", b, inst, d)
	}
	return nil
}

// decodeOptHist decodes a histogram a generator may have left out (an
// older one): empty bytes give an empty histogram.
func decodeOptHist(b []byte) (*hdrhistogram.Histogram, error) {
	if len(b) == 0 {
		return newHist(), nil
	}
	return decodeHist(b)
}

// decodeOptPacked is decodeOptHist for a sparse histogram.
func decodeOptPacked(b []byte) (*hdrhistogram.PackedHistogram, error) {
	if len(b) == 0 {
		return newPacked(), nil
	}
	return decodePacked(b)
}

// reduceBefore reduces the buckets below b. c.mu is not held; the
// Merger's is.
func (c *Collector) reduceBefore(b int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ; c.finalized < min(b, len(c.series[0].Requests)); c.finalized++ {
		c.reduce(c.finalized)
	}
}

// mergeTotals adds a generator's totals to c.
func (c *Collector) mergeTotals(t *streamTotals) error {
	if len(t.Instances) != c.instances {
		return fmt.Errorf("totals of %d instances, want %d", len(t.Instances), c.instances)
	}
	buckets := len(c.series[0].Requests)
	overall, err := decodeHist(t.Overall)
	if err != nil {
		return fmt.Errorf("latency histogram: %w", err)
	}
	lag, err := decodeHist(t.Lag)
	if err != nil {
		return fmt.Errorf("send lag histogram: %w", err)
	}
	overallOK, err := decodeOptHist(t.OverallOK)
	if err != nil {
		return fmt.Errorf("successful requests' latency histogram: %w", err)
	}
	overallFailed, err := decodeOptHist(t.OverallFailed)
	if err != nil {
		return fmt.Errorf("failed requests' latency histogram: %w", err)
	}
	inst := make([]*hdrhistogram.PackedHistogram, c.instances)
	instOK := make([]*hdrhistogram.PackedHistogram, c.instances)
	instFailed := make([]*hdrhistogram.PackedHistogram, c.instances)
	for i, si := range t.Instances {
		if inst[i], err = decodePacked(si.Hist); err != nil {
			return fmt.Errorf("instance %d histogram: %w", i, err)
		}
		if instOK[i], err = decodeOptPacked(si.HistOK); err != nil {
			return fmt.Errorf("instance %d successful requests' histogram: %w", i, err)
		}
		if instFailed[i], err = decodeOptPacked(si.HistFailed); err != nil {
			return fmt.Errorf("instance %d failed requests' histogram: %w", i, err)
		}
		if len(si.SeriesRequests) != buckets || len(si.SeriesErrors) != buckets {
			return fmt.Errorf("instance %d: %d seconds, want %d", i, len(si.SeriesRequests), buckets)
		}
	}
	if t.Unrouted != nil && len(t.Unrouted) != buckets {
		return fmt.Errorf("unrouted: %d seconds, want %d", len(t.Unrouted), buckets)
	}
	if len(t.KeyInst) != len(t.Keys) || len(t.KeyN) != len(t.Keys) {
		return fmt.Errorf("keys: lists of different lengths")
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests += t.Requests
	c.successes += t.Successes
	c.timeouts += t.Timeouts
	c.slowCount += t.Slow
	c.unattributed += t.Unattributed
	c.aborted += t.Aborted
	c.late += t.Late
	if d := c.overall.Merge(overall) + c.lag.Merge(lag) + c.overallOK.Merge(overallOK) + c.overallFailed.Merge(overallFailed); d > 0 {
		return fmt.Errorf("%d values outside the histograms' range", d)
	}
	for i, si := range t.Instances {
		a := &c.inst[i]
		if d := a.hist.merge(inst[i]) + a.histOK.merge(instOK[i]) + a.histFailed.merge(instFailed[i]); d > 0 {
			return fmt.Errorf("instance %d: %d values outside the histogram's range", i, d)
		}
		a.requests += si.Requests
		a.errors += si.Errors
		a.timeouts += si.Timeouts
		a.slowReqs += si.Slow
		s := &c.series[i]
		for b := range buckets {
			s.Requests[b] += si.SeriesRequests[b]
			s.Errors[b] += si.SeriesErrors[b]
		}
	}
	if t.Unrouted != nil {
		if c.unrouted == nil {
			c.unrouted = make([]int64, buckets)
		}
		for b, n := range t.Unrouted {
			c.unrouted[b] += n
		}
	}
	for i, key := range t.Keys {
		c.countKeyN(key, int(t.KeyInst[i]), t.KeyN[i])
	}
	return c.flow.merge(t.Flow)
}
