package faultyserver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestExecutedRoundTrip(t *testing.T) {
	var l seqLog
	var want []uint64
	// Two blocks and a bit, with duplicates and numbers far apart.
	for i := range 2*seqBlock + 17 {
		seq := uint64(i * 7)
		if i%100 == 0 {
			seq = uint64(i) << 40
		}
		l.record([]string{strconv.FormatUint(seq, 10)})
		want = append(want, seq)
		if i%1000 == 0 {
			l.record([]string{strconv.FormatUint(seq, 10)})
			want = append(want, seq)
		}
	}
	l.record(nil)
	l.record([]string{"not-a-number"})
	x, err := ParseExecuted(l.snapshot())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	got := slices.Sorted(slices.Values(x.Seqs))
	if !slices.Equal(got, want) {
		t.Fatalf("got %d numbers, want %d (first difference at %d)", len(got), len(want), firstDiff(got, want))
	}
	if x.Unlabelled != 2 || x.Dropped != 0 {
		t.Errorf("unlabelled %d, dropped %d; want 2, 0", x.Unlabelled, x.Dropped)
	}
	// Dense numbers, as one instance of six sees them, pack to about a
	// byte each.
	var dense seqLog
	for i := range 60000 {
		dense.record([]string{strconv.Itoa(i * 6)})
	}
	if n := len(dense.snapshot()); n > 70000 {
		t.Errorf("60000 dense numbers take %d bytes; want about one each", n)
	}

	// AppendExecuted writes the same format.
	y, err := ParseExecuted(AppendExecuted(nil, Executed{Seqs: []uint64{5, 1, 5}, Unlabelled: 3, Dropped: 4}))
	if err != nil || !slices.Equal(slices.Sorted(slices.Values(y.Seqs)), []uint64{1, 5, 5}) || y.Unlabelled != 3 || y.Dropped != 4 {
		t.Errorf("AppendExecuted round trip: %+v, %v", y, err)
	}
	l.reset()
	if x, err := ParseExecuted(l.snapshot()); err != nil || len(x.Seqs) != 0 || x.Unlabelled != 0 {
		t.Errorf("after reset: %+v, %v; want nothing", x, err)
	}
}

func firstDiff(a, b []uint64) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestParseExecutedRejects(t *testing.T) {
	good := AppendExecuted(nil, Executed{Seqs: []uint64{1, 2, 300}})
	for name, b := range map[string][]byte{
		"empty":       nil,
		"no magic":    []byte("hello"),
		"truncated":   good[:len(good)-1],
		"extra":       append(slices.Clone(good), 1, 0),
		"count lies":  AppendExecuted(nil, Executed{})[:len(executedMagic)],
		"huge count":  append([]byte(executedMagic), 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0),
		"zero length": append(AppendExecuted(nil, Executed{}), 0),
	} {
		if _, err := ParseExecuted(b); !errors.Is(err, errExecuted) {
			t.Errorf("%s: err %v, want %v", name, err, errExecuted)
		}
	}
}

// Every request a server's handler read counts, whatever its fault made
// of it: served, failed, hung (and given up by its client) or reset; and
// a POST's body is read before the fault acts.
func TestServerCountsExecutedRequests(t *testing.T) {
	in := start(t, Config{ID: 4, Workers: 2, Service: Fixed(0), Token: "secret"})
	ctl := &Client{BaseURL: in.ts.URL, HTTP: in.client, Token: "secret"}
	send := func(method string, seq int, body string) result {
		req, err := http.NewRequestWithContext(t.Context(), method, in.ts.URL+"/orders", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if seq >= 0 {
			req.Header.Set(SeqHeader, strconv.Itoa(seq))
		}
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		resp, err := in.client.Do(req.WithContext(ctx))
		if err != nil {
			return result{err: err}
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return result{status: resp.StatusCode, body: string(b)}
	}
	if r := send(http.MethodPost, 1, "a body"); r.status != 200 {
		t.Fatalf("served POST: %+v", r)
	}
	send(http.MethodGet, 2, "")
	send(http.MethodGet, 2, "") // the same request again: a retry
	mustSetFault(t, in.s, Fail{Status: 503})
	if r := send(http.MethodPost, 3, "x"); r.status != 503 {
		t.Fatalf("failed POST: %+v", r)
	}
	mustSetFault(t, in.s, Reset{})
	if r := send(http.MethodPost, 4, strings.Repeat("y", 100<<10)); r.err == nil {
		t.Fatalf("reset POST answered: %+v", r)
	}
	mustSetFault(t, in.s, Hang{})
	if r := send(http.MethodPost, 5, "z"); r.err == nil {
		t.Fatalf("hanging POST answered: %+v", r)
	}
	in.s.ClearFault()
	send(http.MethodGet, -1, "") // no sequence number

	x, err := ctl.Executed(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(slices.Values(x.Seqs)); !slices.Equal(got, []uint64{1, 2, 2, 3, 4, 5}) || x.Unlabelled != 1 {
		t.Errorf("executed %v, unlabelled %d; want [1 2 2 3 4 5], 1", got, x.Unlabelled)
	}

	// The endpoint is the control API's: it needs the token.
	var apiErr *APIError
	if _, err := (&Client{BaseURL: in.ts.URL, HTTP: in.client}).Executed(t.Context()); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: %v, want a 401", err)
	}
	if r := do(t.Context(), in.client, http.MethodPost, in.ts.URL+ExecutedPath, nil); r.status != http.StatusUnauthorized {
		t.Errorf("POST without the token: %d, want 401", r.status)
	}

	if err := ctl.Reset(t.Context()); err != nil {
		t.Fatal(err)
	}
	if x, err := ctl.Executed(t.Context()); err != nil || len(x.Seqs) != 0 || x.Unlabelled != 0 {
		t.Errorf("after reset: %+v, %v; want nothing", x, err)
	}
}

// A request whose client goes away while sending its body was not taken
// in: it does not count, and nothing is answered.
func TestServerSkipsUnreadRequest(t *testing.T) {
	in := start(t, Config{ID: 1, Workers: 1, Service: Fixed(0)})
	conn, err := net.Dial("tcp", in.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\n"+SeqHeader+": 9\r\nContent-Length: 100\r\n\r\nonly part")
	time.Sleep(20 * time.Millisecond)
	conn.Close()
	waitStats(t, in.s, "the unread request dropped", func(st Stats) bool { return st.Dropped == 1 })
	if x := mustParse(t, in.s.executedList()); len(x.Seqs) != 0 {
		t.Errorf("executed %v; want none", x.Seqs)
	}
}

func mustParse(t *testing.T, b []byte) Executed {
	t.Helper()
	x, err := ParseExecuted(b)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// A sidecar counts what it admits, forwarded or not, and many requests at
// once lose none.
func TestSidecarCountsExecutedRequests(t *testing.T) {
	up := startUpstream(t, echo)
	sc := startSidecar(t, SidecarConfig{ID: 2}, up)
	const n = 500
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, sc.ts.URL+"/", bytes.NewReader([]byte("body")))
			req.Header.Set(SeqHeader, strconv.Itoa(i))
			if resp, err := sc.client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	mustSetSidecarFault(t, sc.s, Fail{Status: 500})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, sc.ts.URL+"/", nil)
	req.Header.Set(SeqHeader, "7")
	if resp, err := sc.client.Do(req); err == nil {
		resp.Body.Close()
	}
	x, err := sc.control().Executed(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := make([]uint64, 0, n+1)
	for i := range n {
		want = append(want, uint64(i))
	}
	want = append(want, 7)
	slices.Sort(want)
	if got := slices.Sorted(slices.Values(x.Seqs)); !slices.Equal(got, want) {
		t.Errorf("sidecar executed %d numbers, want %d (0..%d and 7 again)", len(got), len(want), n-1)
	}
	if up.hits.Load() != n {
		t.Errorf("upstream saw %d requests, want %d (the failed one is the sidecar's)", up.hits.Load(), n)
	}
}

// BenchmarkSeqLogRecord: the cost of counting one request, from many
// handlers at once.
func BenchmarkSeqLogRecord(b *testing.B) {
	var l seqLog
	var next atomic.Uint64
	b.RunParallel(func(pb *testing.PB) {
		v := []string{""}
		for pb.Next() {
			v[0] = strconv.FormatUint(next.Add(1), 10)
			l.record(v)
		}
	})
}
