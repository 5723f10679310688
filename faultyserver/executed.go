package faultyserver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
)

// SeqHeader is the header the load generator (Vegeta) sets on every
// request, the request's sequence number in decimal. A proxy passes it on
// to the instance, and a retry, by a proxy or by the client's own policy,
// carries the same number as the attempt it repeats.
const SeqHeader = "X-Vegeta-Seq"

// ExecutedPath is the control API endpoint that returns the sequence
// numbers (SeqHeader) of the requests the instance executed since it
// started or was last reset (see Executed and AppendExecuted).
const ExecutedPath = ControlPrefix + "executed"

// executedMagic opens ExecutedPath's answer: its format and version.
const executedMagic = "lbchaos-executed/1\n"

// Executed is what an instance answers at ExecutedPath: the sequence
// numbers of the service requests it executed. A request counts once its
// handler read it, its body included, whatever happened next (served,
// failed, hung, reset, dropped): what the instance would have acted upon.
// A Sidecar counts a request when it admits it, before its fault's plan
// (a forwarded one reaches the service; a failed, hung or reset one does
// not).
type Executed struct {
	// Seqs holds a number per request executed, in no particular order: a
	// request executed twice (a retry that reached this instance again)
	// appears twice.
	Seqs []uint64
	// Unlabelled counts the service requests executed without a valid
	// SeqHeader (a client other than the load generator).
	Unlabelled int64
	// Dropped counts the sequence numbers not kept because the instance
	// held MaxExecuted already; when it is not 0, Seqs is incomplete.
	Dropped int64
}

// MaxExecuted is how many sequence numbers an instance keeps between
// resets; past it, it counts the rest in Executed.Dropped. Kept packed,
// a number takes one to three bytes.
const MaxExecuted = 1 << 27

// seqBlock is how many numbers the log takes before it packs them.
const seqBlock = 8192

// seqLog records the sequence numbers of the requests an instance executed:
// the latest up to seqBlock as they came, the rest packed in sorted runs
// (see appendRun), which take a byte or two a number for the dense numbers
// one instance sees of a load generator's. Safe for concurrent use.
type seqLog struct {
	mu      sync.Mutex
	pending []uint64 // not packed yet
	packed  []byte   // runs, each sorted
	n       int64    // numbers kept, pending and packed

	unlabelled, dropped atomic.Int64
}

// record notes the execution of a request whose SeqHeader values are vs.
func (l *seqLog) record(vs []string) {
	if len(vs) == 0 {
		l.unlabelled.Add(1)
		return
	}
	seq, err := strconv.ParseUint(vs[0], 10, 64)
	if err != nil {
		l.unlabelled.Add(1)
		return
	}
	l.mu.Lock()
	if l.n >= MaxExecuted {
		l.mu.Unlock()
		l.dropped.Add(1)
		return
	}
	l.n++
	l.pending = append(l.pending, seq)
	if len(l.pending) >= seqBlock {
		slices.Sort(l.pending)
		l.packed = appendRun(l.packed, l.pending)
		l.pending = l.pending[:0]
	}
	l.mu.Unlock()
}

// reset forgets every number.
func (l *seqLog) reset() {
	l.mu.Lock()
	l.pending, l.packed, l.n = nil, nil, 0
	l.unlabelled.Store(0)
	l.dropped.Store(0)
	l.mu.Unlock()
}

// snapshot returns the log in ExecutedPath's format (AppendExecuted).
func (l *seqLog) snapshot() []byte {
	l.mu.Lock()
	n := l.n
	pending := slices.Clone(l.pending)
	out := make([]byte, 0, len(executedMagic)+3*binary.MaxVarintLen64+len(l.packed)+2*len(pending)+binary.MaxVarintLen64)
	out = append(out, executedMagic...)
	out = binary.AppendUvarint(out, uint64(n))
	out = binary.AppendUvarint(out, uint64(l.unlabelled.Load()))
	out = binary.AppendUvarint(out, uint64(l.dropped.Load()))
	out = append(out, l.packed...)
	l.mu.Unlock()
	slices.Sort(pending)
	return appendRun(out, pending)
}

// appendRun appends the sorted numbers seqs to b as one run: their count,
// the first, then each one's difference from the one before, all as
// unsigned varints. Nothing for no numbers.
func appendRun(b []byte, seqs []uint64) []byte {
	if len(seqs) == 0 {
		return b
	}
	b = binary.AppendUvarint(b, uint64(len(seqs)))
	prev := uint64(0)
	for _, s := range seqs {
		b = binary.AppendUvarint(b, s-prev)
		prev = s
	}
	return b
}

// AppendExecuted appends x to b in ExecutedPath's format: the line
// "lbchaos-executed/1", then as unsigned varints (encoding/binary) the
// count of numbers, Unlabelled and Dropped, then the numbers in runs, each
// its length n > 0 followed by n varints: its first number, then each
// next one's difference from the one before (a run is sorted, so none is
// negative). ParseExecuted reads it.
func AppendExecuted(b []byte, x Executed) []byte {
	b = append(b, executedMagic...)
	b = binary.AppendUvarint(b, uint64(len(x.Seqs)))
	b = binary.AppendUvarint(b, uint64(x.Unlabelled))
	b = binary.AppendUvarint(b, uint64(x.Dropped))
	seqs := slices.Clone(x.Seqs)
	slices.Sort(seqs)
	return appendRun(b, seqs)
}

// errExecuted is wrapped by ParseExecuted's errors.
var errExecuted = errors.New("malformed executed list")

// ParseExecuted reads ExecutedPath's answer (see AppendExecuted).
func ParseExecuted(b []byte) (Executed, error) {
	rest, ok := cutPrefix(b, executedMagic)
	if !ok {
		return Executed{}, fmt.Errorf("%w: does not start with %q", errExecuted, executedMagic[:len(executedMagic)-1])
	}
	var head [3]uint64
	for i, name := range []string{"count", "unlabelled", "dropped"} {
		v, n := binary.Uvarint(rest)
		if n <= 0 {
			return Executed{}, fmt.Errorf("%w: %s: not a varint", errExecuted, name)
		}
		head[i], rest = v, rest[n:]
	}
	count := head[0]
	// Every number takes at least a byte: a count beyond the body is a lie.
	if count > uint64(len(rest)) {
		return Executed{}, fmt.Errorf("%w: count %d, but only %d bytes follow", errExecuted, count, len(rest))
	}
	x := Executed{Seqs: make([]uint64, 0, count), Unlabelled: int64(head[1]), Dropped: int64(head[2])}
	for len(rest) > 0 {
		runLen, n := binary.Uvarint(rest)
		if n <= 0 || runLen == 0 || runLen > count-uint64(len(x.Seqs)) {
			return Executed{}, fmt.Errorf("%w: run after %d numbers: bad length", errExecuted, len(x.Seqs))
		}
		rest = rest[n:]
		prev := uint64(0)
		for range runLen {
			d, n := binary.Uvarint(rest)
			if n <= 0 {
				return Executed{}, fmt.Errorf("%w: number %d: not a varint", errExecuted, len(x.Seqs))
			}
			prev += d
			x.Seqs = append(x.Seqs, prev)
			rest = rest[n:]
		}
	}
	if uint64(len(x.Seqs)) != count {
		return Executed{}, fmt.Errorf("%w: count %d, but %d numbers follow", errExecuted, count, len(x.Seqs))
	}
	return x, nil
}

func cutPrefix(b []byte, prefix string) ([]byte, bool) {
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return nil, false
	}
	return b[len(prefix):], true
}

// receive reads a service request to the end of its body and records its
// execution; false when the body could not be read (its client went away
// while sending it), and the request is not executed.
func (s *instanceState) receive(r *http.Request) bool {
	if r.Body != nil && r.Body != http.NoBody {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return false
		}
	}
	s.seqs.record(r.Header[SeqHeader])
	return true
}

// executedList is the control API's answer at ExecutedPath.
func (s *instanceState) executedList() []byte { return s.seqs.snapshot() }

// serveExecuted answers GET ExecutedPath.
func serveExecuted(s controlled, w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	b := s.executedList()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}
