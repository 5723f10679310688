package live

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/strategies"
)

// bigBody is the size of the answer to GET /big: larger than the socket
// buffers of both ends, so that a client that stopped reading would make
// the server's writes fail.
const bigBody = 16 << 20

// received is what a counting instance got on one method and path.
type received struct {
	n        int
	bodies   map[string]int // request body -> times
	keys     map[string]int // strategies.KeyHeader value -> times
	sentFull int            // answers written to the end (GET /big)
}

// countingProvider starts instances that count every request by method
// and path, answer 200 with faultyserver.InstanceHeader, 200 on /healthz
// (the engine's health check), 404 on the rest of the control API, and
// bigBody bytes on GET /big.
type countingProvider struct {
	mu  sync.Mutex
	got map[string]*received // "instance METHOD path" -> received
}

var (
	_ fleet.Provider  = (*countingProvider)(nil)
	_ fleet.InProcess = (*countingProvider)(nil)
)

func (p *countingProvider) Name() string    { return "counting" }
func (p *countingProvider) InProcess() bool { return true }

func (p *countingProvider) Start(_ context.Context, spec fleet.Spec) (fleet.Fleet, error) {
	f := &countingFleet{}
	for id := range spec.Count {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(faultyserver.InstanceHeader, strconv.Itoa(id))
			switch {
			case r.URL.Path == faultyserver.HealthPath:
				return
			case strings.HasPrefix(r.URL.Path, "/_chaos/"): // no control API
				http.NotFound(w, r)
				return
			}
			body, err := io.ReadAll(r.Body)
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			full := false
			if r.URL.Path == "/big" {
				n, err := io.Copy(w, io.LimitReader(zeros{}, bigBody))
				full = err == nil && n == bigBody
			}
			p.record(fmt.Sprintf("%d %s %s", id, r.Method, r.URL.RequestURI()), string(body), r.Header.Get(strategies.KeyHeader), full)
		}))
		u, _ := url.Parse(srv.URL)
		f.srvs = append(f.srvs, srv)
		f.backends = append(f.backends, fleet.Backend{ID: id, URL: u, Control: &faultyserver.Client{BaseURL: srv.URL}})
	}
	return f, nil
}

func (p *countingProvider) record(what, body, key string, full bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.got == nil {
		p.got = map[string]*received{}
	}
	r := p.got[what]
	if r == nil {
		r = &received{bodies: map[string]int{}, keys: map[string]int{}}
		p.got[what] = r
	}
	r.n++
	r.bodies[body]++
	r.keys[key]++
	if full {
		r.sentFull++
	}
}

type countingFleet struct {
	srvs     []*httptest.Server
	backends []fleet.Backend
}

func (f *countingFleet) Backends() []fleet.Backend { return f.backends }
func (f *countingFleet) Close() error {
	for _, s := range f.srvs {
		s.Close()
	}
	return nil
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestRunTargetsFile runs a targets file of two POST paths with bodies
// and a large GET through the real engine, and compares what the
// instances received with the file: every target in turn, its body
// byte for byte, the path's key in the key header (all of one key on one
// instance under key-hash), and every large answer read to its end.
func TestRunTargetsFile(t *testing.T) {
	if testing.Short() {
		t.Skip("real load for a second")
	}
	dir := t.TempDir()
	files := map[string]string{
		"targets.txt": "# two POST paths and a large answer\n" +
			"POST http://ignored.example/orders\nContent-Type: application/json\n@bodies/order.json\n\n" +
			"POST /users/7/cart\nContent-Type: text/plain\n@bodies/cart.txt\n\n" +
			"GET /big\n",
		"bodies/order.json": `{"sku":"a-1","qty":3}`,
		"bodies/cart.txt":   "add 2\nremove 1\n",
		"targets-case.yaml": `name: targets-case
seed: 9
duration: 1s
arrival: constant
rate: 30
instances: {count: 2, service: {dist: fixed, value: 1ms}}
requests: {targets: targets.txt, key: {path: "/users/{key}/"}}
strategies: [key-hash]
`,
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exp, err := experiments.LoadFile(filepath.Join(dir, "targets-case.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	prov := &countingProvider{}
	sum, err := run(context.Background(), exp, Options{Provider: prov})
	if err != nil {
		t.Fatal(err)
	}
	st := sum.Strategies[0]
	if st.Requests < 20 || st.ErrorRatio != 0 {
		t.Fatalf("%d requests, error ratio %v; want about 30 without errors", st.Requests, st.ErrorRatio)
	}

	// Sum the instances' counts per method and path.
	type total struct {
		n, full   int
		instances []string
		bodies    map[string]int
		keys      map[string]int
	}
	totals := map[string]*total{}
	for what, r := range prov.got {
		id, target, _ := strings.Cut(what, " ")
		tt := totals[target]
		if tt == nil {
			tt = &total{bodies: map[string]int{}, keys: map[string]int{}}
			totals[target] = tt
		}
		tt.n += r.n
		tt.full += r.sentFull
		tt.instances = append(tt.instances, id)
		for b, n := range r.bodies {
			tt.bodies[b] += n
		}
		for k, n := range r.keys {
			tt.keys[k] += n
		}
	}
	if len(totals) != 3 {
		t.Fatalf("received %v; want exactly the three targets", totals)
	}
	n := int(st.Requests)
	tests := []struct {
		target string
		body   string
		key    string
	}{
		{"POST /orders", files["bodies/order.json"], ""},
		{"POST /users/7/cart", files["bodies/cart.txt"], "7"},
		{"GET /big", "", ""},
	}
	var all int
	for i, want := range tests {
		got := totals[want.target]
		if got == nil {
			t.Errorf("%s: never received", want.target)
			continue
		}
		all += got.n
		// Target i is request k for every k = i mod 3.
		if wantN := (n - i + 2) / 3; got.n != wantN {
			t.Errorf("%s: received %d times, want %d of %d in turn", want.target, got.n, wantN, n)
		}
		if got.bodies[want.body] != got.n {
			t.Errorf("%s: bodies %v, want %q every time", want.target, got.bodies, want.body)
		}
		if got.keys[want.key] != got.n {
			t.Errorf("%s: keys %v, want %q every time", want.target, got.keys, want.key)
		}
		if want.key != "" && len(got.instances) != 1 {
			t.Errorf("%s: one key went to instances %v under key-hash, want one", want.target, got.instances)
		}
	}
	if all != n {
		t.Errorf("instances received %d requests, the summary counts %d", all, n)
	}
	if big := totals["GET /big"]; big != nil && big.full != big.n {
		t.Errorf("GET /big: %d of %d answers of %d bytes written to the end; the client must read every body", big.full, big.n, bigBody)
	}
}

// TestTargeterFollowsTheList checks the targeter against the picker: target
// k is the list's request the seed chooses for k, with its key in
// strategies.KeyHeader when it has one, and the list's headers untouched.
func TestTargeterFollowsTheList(t *testing.T) {
	exp := runtest.MustExperiment(t, "list-case", `
seed: 4
duration: 1s
rate: 10
instances: {count: 2, service: {dist: fixed, value: 1ms}}
requests:
  key: {header: X-User}
  list:
    - {method: POST, path: /orders, headers: {X-User: "12", Content-Type: application/json}, body: '{"a":1}', weight: 3}
    - {path: "/health?deep=1", weight: 1}
strategies: [key-hash]
`)
	start := time.Now()
	tr := newTargeter(exp, &start, 0, 1)
	pick := engine.NewRequestPicker(exp.Requests, exp.Seed)
	counts := [2]int{}
	for k := range uint64(2000) {
		var got vegeta.Target
		if err := tr(&got); err != nil {
			t.Fatal(err)
		}
		i := pick.Pick(k)
		counts[i]++
		r := exp.Requests.List[i]
		if got.Method != r.Method || got.URL != backendBase+r.Path || string(got.Body) != string(r.Body) {
			t.Fatalf("target %d: %s %s %q, want request %d: %s %s %q", k, got.Method, got.URL, got.Body, i, r.Method, r.Path, r.Body)
		}
		wantKey := ""
		if r.HasKey {
			wantKey = strconv.FormatUint(r.Key, 10)
		}
		if key := got.Header.Get(strategies.KeyHeader); key != wantKey {
			t.Fatalf("target %d: key %q, want %q", k, key, wantKey)
		}
	}
	if h := exp.Requests.List[0].Header; h.Get(strategies.KeyHeader) != "" {
		t.Errorf("the list's own headers gained the key header: %v", h)
	}
	if counts[0] < 1400 || counts[0] > 1600 {
		t.Errorf("request 0 (weight 3 of 4) sent %d times of 2000, want about 1500", counts[0])
	}
}
