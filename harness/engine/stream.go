package engine

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"strings"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lbchaos/lbchaos/reports"
)

// A generator's stream carries what one load generator of a distributed
// run measured (`generators: N`) to the coordinator that merges it. It is
// written to a process's standard output and read from it, or from a
// Kubernetes pod's log, so it is line-oriented and survives being mixed
// with other lines:
//
//	stream  = a sequence of frames, the last one the trailer
//	frame   = kind (1 byte) | payload length (uvarint) | payload (gob)
//	line    = StreamPrefix | base64 of up to streamLineBytes bytes of the stream | "\n"
//
// A frame's bytes are carried by one or more consecutive lines, and no line
// carries bytes of two frames. A line is read from the first StreamPrefix
// in it (anything before it, such as a log timestamp, is ignored); lines
// without it are not part of the stream. The frames are, in order: one
// header, buckets (each second's per-instance latency histograms, in
// HdrHistogram's own V2 encoding, sent once every request of the second has
// ended), progress (counts so far, about once a second), raw results when
// asked for (Vegeta-encoded), one end frame (the
// generator's totals, events and counters) and the trailer, which counts
// the frames and bytes before it and holds their CRC-32: a stream cut short
// or with lines lost is detected, not merged.
const StreamPrefix = "lbchaos-gen/1 "

// streamLineBytes is how many stream bytes one line carries at most: 4 KiB
// of base64, well under the line limits of container runtimes' logs.
const streamLineBytes = 3 << 10

// maxFrame bounds a frame's payload when reading.
const maxFrame = 1 << 30

// streamVersion is the version of the frames' payloads.
const streamVersion = 1

// Frame kinds.
const (
	frameHeader byte = 1 + iota
	frameBucket
	frameRaw
	frameEnd
	frameTrailer
	frameProgress
)

// StreamHeader opens a generator's stream: who wrote it and for what.
type StreamHeader struct {
	Version               int
	Generator, Generators int
	Replicas              int
	Strategy              string
	Instances, Buckets    int
	// Start is the shared start of the attack (Unix nanoseconds); Late how
	// long after it the generator was ready to send (0 when in time).
	Start int64
	Late  time.Duration
}

// GeneratorResult is what a generator measured besides its collector.
type GeneratorResult struct {
	Sent      int64
	Scheduled uint64 // arrivals of the generator's share due within Elapsed
	// Behind is true when the generator sent less than 99% of its share.
	Behind      bool
	Elapsed     time.Duration
	Interrupted bool
	Ejections   int
	Retry       *reports.RetryStats // nil without a retry or hedge policy
	EventDrops  int
	CapHits     int64
	ConnBound   int
	Notes       []string
	// Unnamed are the results of a proxy strategy that no instance was
	// named for, by their sequence number in the whole run, for the
	// coordinator to attribute from the proxy's access log.
	Unnamed []SeqOutcome
}

// SeqOutcome is a request's outcome with its sequence number.
type SeqOutcome struct {
	Seq     uint64
	Outcome Outcome
}

type bucketFrame struct {
	Bucket    int
	Instances []int
	Hists     [][]byte // HdrHistogram V2, base64-decoded
	// OKInstances and OKHists are the same of the successful requests
	// alone.
	OKInstances []int
	OKHists     [][]byte
}

type endFrame struct {
	Result GeneratorResult
	Events []streamEvent
	Totals streamTotals
}

type streamEvent struct {
	TimeS        float64
	Instance     int
	Kind, Detail string
	Replica, Seq int
}

type streamTotals struct {
	Requests, Successes, Timeouts, Slow int64
	Unattributed, Aborted, Late         int64
	Overall, Lag                        []byte
	// OverallOK and OverallFailed split Overall by outcome; empty from a
	// generator that did not send them.
	OverallOK, OverallFailed []byte
	Instances                []streamInstance
	Unrouted                 []int64
	// Keys as parallel lists: KeyN[i] requests with key Keys[i] went to
	// instance KeyInst[i].
	Keys    []uint64
	KeyInst []int32
	KeyN    []int64
	// Flow is the collector's count of requests as attempts; nil from a
	// generator that did not send it.
	Flow *streamFlow
}

// streamFlow is a collector's flow (attempts.go) on the wire.
type streamFlow struct {
	PerAttempt                 bool
	Offered, Attempts, Goodput []int64
	PerRequest, Cancelled      []int64
	Total                      int64
}

type streamInstance struct {
	Hist, HistOK, HistFailed         []byte
	Requests, Errors, Timeouts, Slow int64
	SeriesRequests, SeriesErrors     []int64
}

type trailerFrame struct {
	Frames, Bytes uint64
	CRC           uint32
}

// StreamWriter writes a generator's stream. Safe for concurrent use; the
// first write error sticks and is returned by every later call.
type StreamWriter struct {
	mu     sync.Mutex
	w      io.Writer
	crc    hash.Hash32
	bytes  uint64
	frames uint64
	err    error
}

// NewStreamWriter writes h as the stream's header to w.
func NewStreamWriter(w io.Writer, h StreamHeader) *StreamWriter {
	s := &StreamWriter{w: w, crc: crc32.NewIEEE()}
	h.Version = streamVersion
	_ = s.frame(frameHeader, h)
	return s
}

// Bucket writes bucket b's per-instance histograms of every request and
// of the successful ones (nil entries are skipped); a Collector's
// EmitBuckets callback.
func (s *StreamWriter) Bucket(b int, hists, ok []*hdrhistogram.PackedHistogram) error {
	f := bucketFrame{Bucket: b}
	var err error
	if f.Instances, f.Hists, err = encodePackedList(hists); err != nil {
		return s.fail(err)
	}
	if f.OKInstances, f.OKHists, err = encodePackedList(ok); err != nil {
		return s.fail(err)
	}
	return s.frame(frameBucket, f)
}

// encodePackedList encodes the non-empty histograms of hists, with their
// indexes.
func encodePackedList(hists []*hdrhistogram.PackedHistogram) ([]int, [][]byte, error) {
	var idx []int
	var out [][]byte
	for i, h := range hists {
		if h == nil || h.TotalCount() == 0 {
			continue
		}
		enc, err := h.Encode()
		if err != nil {
			return nil, nil, err
		}
		raw, err := base64.StdEncoding.DecodeString(string(enc))
		if err != nil {
			return nil, nil, err
		}
		idx, out = append(idx, i), append(out, raw)
	}
	return idx, out, nil
}

// GeneratorProgress is a generator's attack in progress.
type GeneratorProgress struct {
	Results, Errors, InFlight int64
}

// Progress writes how far the attack is, for the coordinator's progress
// line.
func (s *StreamWriter) Progress(p GeneratorProgress) error { return s.frame(frameProgress, p) }

// Raw writes a piece of the generator's raw results (Vegeta's encoding);
// the coordinator writes each generator's pieces, in order, to its sink.
func (s *StreamWriter) Raw(p []byte) error { return s.frame(frameRaw, p) }

// End writes the generator's totals from c (finished), its events and res,
// then the trailer. Nothing may be written after it.
func (s *StreamWriter) End(c *Collector, events *EventLog, res GeneratorResult) error {
	t, err := c.totals()
	if err != nil {
		return s.fail(err)
	}
	e := endFrame{Result: res, Totals: t}
	var drops int
	e.Events, drops = events.stream()
	e.Result.EventDrops += drops
	if err := s.frame(frameEnd, e); err != nil {
		return err
	}
	s.mu.Lock()
	tr := trailerFrame{Frames: s.frames, Bytes: s.bytes, CRC: s.crc.Sum32()}
	s.mu.Unlock()
	return s.frame(frameTrailer, tr)
}

func (s *StreamWriter) fail(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
	return s.err
}

// frame writes v, gob-encoded, as a frame of kind.
func (s *StreamWriter) frame(kind byte, v any) error {
	var payload bytes.Buffer
	if err := gob.NewEncoder(&payload).Encode(v); err != nil {
		return s.fail(fmt.Errorf("encode frame %d: %w", kind, err))
	}
	buf := make([]byte, 0, 1+binary.MaxVarintLen64+payload.Len())
	buf = append(buf, kind)
	buf = binary.AppendUvarint(buf, uint64(payload.Len()))
	buf = append(buf, payload.Bytes()...)

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	var lines bytes.Buffer
	for p := buf; len(p) > 0; {
		n := min(len(p), streamLineBytes)
		lines.WriteString(StreamPrefix)
		lines.WriteString(base64.StdEncoding.EncodeToString(p[:n]))
		lines.WriteByte('\n')
		p = p[n:]
	}
	if _, err := s.w.Write(lines.Bytes()); err != nil {
		s.err = err
		return err
	}
	if kind != frameTrailer {
		s.frames++
		s.bytes += uint64(len(buf))
		_, _ = s.crc.Write(buf)
	}
	return nil
}

// ErrTruncated is wrapped by the error of a stream that ends before its
// trailer.
var ErrTruncated = errors.New("stream truncated")

// readStream reads a generator's stream from r and hands each frame but
// the trailer to f, in order. It returns nil only for a complete stream
// whose trailer matches what came before it.
func readStream(r io.Reader, f func(kind byte, payload []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		pending []byte // stream bytes not yet parsed into a frame
		frames  uint64
		total   uint64
		crc     = crc32.NewIEEE()
		lineNo  int
	)
	for {
		line, rerr := br.ReadString('\n')
		if rerr != nil && rerr != io.EOF {
			return fmt.Errorf("read: %w", rerr)
		}
		if line != "" {
			lineNo++
			if i := strings.Index(line, StreamPrefix); i >= 0 {
				data := strings.TrimRight(line[i+len(StreamPrefix):], "\r\n")
				b, err := base64.StdEncoding.DecodeString(data)
				if err != nil {
					return fmt.Errorf("line %d: %w", lineNo, err)
				}
				pending = append(pending, b...)
				for len(pending) > 0 {
					kind := pending[0]
					size, n := binary.Uvarint(pending[1:])
					if n == 0 {
						break // the length is still to come
					}
					if n < 0 || size > maxFrame {
						return fmt.Errorf("line %d: bad frame length", lineNo)
					}
					end := 1 + n + int(size)
					if len(pending) < end {
						break
					}
					frame, payload := pending[:end], pending[1+n:end]
					if kind == frameTrailer {
						var tr trailerFrame
						if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&tr); err != nil {
							return fmt.Errorf("trailer: %w", err)
						}
						if tr.Frames != frames || tr.Bytes != total || tr.CRC != crc.Sum32() {
							return fmt.Errorf("the trailer counts %d frames, %d bytes, CRC %08x, the stream had %d, %d, %08x: lines were lost or damaged",
								tr.Frames, tr.Bytes, tr.CRC, frames, total, crc.Sum32())
						}
						return nil
					}
					if frames == 0 && kind != frameHeader {
						return fmt.Errorf("line %d: the stream does not start with its header", lineNo)
					}
					frames++
					total += uint64(len(frame))
					_, _ = crc.Write(frame)
					if err := f(kind, payload); err != nil {
						return err
					}
					pending = pending[end:]
				}
			}
		}
		if rerr == io.EOF {
			if frames == 0 {
				return fmt.Errorf("%w: no frames", ErrTruncated)
			}
			return fmt.Errorf("%w: ended after %d frames without its trailer", ErrTruncated, frames)
		}
	}
}

func decodeFrame(payload []byte, v any) error {
	return gob.NewDecoder(bytes.NewReader(payload)).Decode(v)
}

// encodeHist returns h in HdrHistogram's V2 encoding, base64-decoded.
func encodeHist(h *hdrhistogram.Histogram) ([]byte, error) {
	enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(string(enc))
}

// encodePacked encodes h as encodeHist encodes a dense histogram of the
// same counts: the bytes are the same.
func encodePacked(h *hdrhistogram.PackedHistogram) ([]byte, error) {
	enc, err := h.Encode()
	if err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(string(enc))
}

func decodeHist(b []byte) (*hdrhistogram.Histogram, error) {
	return hdrhistogram.Decode([]byte(base64.StdEncoding.EncodeToString(b)))
}

func decodePacked(b []byte) (*hdrhistogram.PackedHistogram, error) {
	return hdrhistogram.DecodePacked([]byte(base64.StdEncoding.EncodeToString(b)))
}

// stream returns the log's events for a generator's stream.
func (l *EventLog) stream() ([]streamEvent, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]streamEvent, len(l.events))
	for i, e := range l.events {
		out[i] = streamEvent{TimeS: e.TimeS, Instance: e.Instance, Kind: e.Kind, Detail: e.Detail, Replica: e.replica, Seq: e.seq}
	}
	return out, l.drops
}

// totals returns everything c counted but the open buckets, for a
// generator's end frame. c must be finished.
func (c *Collector) totals() (streamTotals, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := streamTotals{
		Requests: c.requests, Successes: c.successes, Timeouts: c.timeouts, Slow: c.slowCount,
		Unattributed: c.unattributed, Aborted: c.aborted, Late: c.late,
		Unrouted:  c.unrouted,
		Instances: make([]streamInstance, c.instances),
	}
	var err error
	if t.Overall, err = encodeHist(c.overall); err != nil {
		return t, err
	}
	if t.Lag, err = encodeHist(c.lag); err != nil {
		return t, err
	}
	if t.OverallOK, err = encodeHist(c.overallOK); err != nil {
		return t, err
	}
	if t.OverallFailed, err = encodeHist(c.overallFailed); err != nil {
		return t, err
	}
	for i, a := range c.inst {
		si := &t.Instances[i]
		if si.Hist, err = a.hist.encode(); err != nil {
			return t, err
		}
		if si.HistOK, err = a.histOK.encode(); err != nil {
			return t, err
		}
		if si.HistFailed, err = a.histFailed.encode(); err != nil {
			return t, err
		}
		si.Requests, si.Errors, si.Timeouts, si.Slow = a.requests, a.errors, a.timeouts, a.slowReqs
		si.SeriesRequests, si.SeriesErrors = c.series[i].Requests, c.series[i].Errors
	}
	f := &c.flow
	t.Flow = &streamFlow{PerAttempt: f.perAttempt, Offered: f.offered, Attempts: f.attempts, Goodput: f.goodput,
		PerRequest: f.perRequest, Cancelled: f.cancelled, Total: f.total}
	for key, kc := range c.keys {
		for _, e := range kc {
			t.Keys, t.KeyInst, t.KeyN = append(t.Keys, key), append(t.KeyInst, e.instance), append(t.KeyN, e.n)
		}
	}
	return t, nil
}
