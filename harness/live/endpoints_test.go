package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/process"
	"github.com/lbchaos/lbchaos/harness/transport"
	"github.com/lbchaos/lbchaos/strategies"
)

// freeAddr returns a loopback address no one listens on at the moment.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// getEndpoints asks the endpoints API at base for the current set.
func getEndpoints(ctx context.Context, base, token string) (map[string]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+EndpointsPath, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var set EndpointSet
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d, %v", EndpointsPath, resp.StatusCode, err)
	}
	return set.Endpoints, nil
}

// TestGenerateFollowsEndpoints runs one generator in this process for
// 2.5 s at 300 requests/s with p2c in two replicas, on four real backends
// of which instance 3 does not exist yet (--target none). About 1 s in,
// the test pushes the set {0, 1, 3} (instance 2 gone, 3 there) through
// the endpoints API, as a coordinator watching a rolling restart would.
// The backends' own counters then show instance 2 got no request once
// the push, and 200 ms for what was in flight (2 ms each), had passed,
// and instance 3 none before the push and some after; each replica
// recorded instance 2's leave and 3's join at the push, and nothing for
// the instance missing at the start; a bad push changed nothing; and the
// API stopped with the generator, leaving no goroutine behind.
//
// Measured (2 cores, -race, while other builds ran; three runs): the push
// at 1.00-1.01 s; instance 2 got 95-96 requests, every one before the
// push (none in flight at it); instance 3 none before it, 148-151 after,
// a third of the rest as p2c over three instances gives.
func TestGenerateFollowsEndpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("real load for a few seconds")
	}
	exp := runtest.MustExperiment(t, "endpoints", `
seed: 7
duration: 2500ms
rate: 300
timeout: 1s
arrival: constant
replicas: 2
instances: {count: 4, workers: 0, service: {dist: fixed, value: 2ms}}
strategies: [p2c]
`)
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		http.DefaultClient.CloseIdleConnections()
		goleak.VerifyNone(t, opt)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const token = "endpoints-test-token"
	fl, err := process.Provider{Token: token}.Start(ctx, fleet.Spec{Instances: exp.Instances, Seed: exp.Seed})
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	backends := fl.Backends()
	requests := func(id int) int64 {
		t.Helper()
		st, err := backends[id].Control.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Served + st.Failed + st.Dropped + st.InFlight + st.Queued
	}
	listen := freeAddr(t)
	base := "http://" + listen
	start := time.Now().Add(500 * time.Millisecond)
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- Generate(ctx, GenerateSpec{
			Exp: exp, Strategy: "p2c", Start: start,
			Targets:         []*url.URL{backends[0].URL, backends[1].URL, backends[2].URL, nil},
			EndpointsListen: listen, Token: token,
		}, &out, io.Discard)
	}()

	// Served before the shared start, without instance 3.
	var set map[string]string
	for time.Now().Before(start) {
		if set, err = getEndpoints(ctx, base, token); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil || time.Now().After(start) {
		t.Fatalf("endpoints API not served before the start: %v", err)
	}
	if want := []string{"0", "1", "2"}; !slices.Equal(slices.Sorted(maps.Keys(set)), want) {
		t.Errorf("before the start: endpoints %v, want instances %v", set, want)
	}

	time.Sleep(time.Until(start.Add(time.Second)))
	before2, before3 := requests(2), requests(3)
	push := map[int]*url.URL{0: backends[0].URL, 1: backends[1].URL, 3: backends[3].URL}
	if err := PushEndpoints(ctx, nil, base, token, push); err != nil {
		t.Fatal(err)
	}
	pushed := time.Since(start)
	time.Sleep(200 * time.Millisecond)
	after2 := requests(2)

	// A bad push is refused and changes nothing.
	err = PushEndpoints(ctx, nil, base, token, map[int]*url.URL{0: backends[0].URL, 4: backends[3].URL})
	if ae, ok := errors.AsType[*faultyserver.APIError](err); !ok || ae.StatusCode != http.StatusBadRequest || !strings.Contains(ae.Message, `endpoints["4"]`) {
		t.Errorf("push with instance 4 of 4: %v, want a 400 naming endpoints[\"4\"]", err)
	}
	if err := PushEndpoints(ctx, nil, base, "wrong", push); err == nil {
		t.Error("push with the wrong token: accepted")
	}
	if set, err := getEndpoints(ctx, base, token); err != nil || len(set) != 3 || set["3"] != backends[3].URL.String() || set["2"] != "" {
		t.Errorf("after the push and a refused one: endpoints %v (%v), want instances 0, 1 and 3", set, err)
	}

	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := getEndpoints(ctx, base, token); err == nil {
		t.Error("the endpoints API still answers after Generate returned")
	}
	final2, final3 := requests(2), requests(3)
	t.Logf("push at %.2f s; instance 2: %d requests before it, %d by 200 ms after, %d at the end; instance 3: %d before, %d at the end",
		pushed.Seconds(), before2, after2, final2, before3, final3)
	if before2 == 0 {
		t.Error("instance 2 got no request before the push")
	}
	if final2 != after2 {
		t.Errorf("instance 2 got %d requests after it left the endpoints", final2-after2)
	}
	if before3 != 0 || final3 == 0 {
		t.Errorf("instance 3: %d requests before it had an address, %d in all; want none, then some", before3, final3)
	}

	// The stream: complete, with the joins and leaves of the push only.
	coll := engine.NewCollector(exp.Instances.Count, exp.Duration, exp.Timeout, exp.SlowThreshold)
	merger := engine.NewMerger(coll, 1)
	if err := merger.Read(0, &out, nil); err != nil {
		t.Fatal(err)
	}
	m, err := merger.Measurement("p2c", nil)
	if err != nil {
		t.Fatal(err)
	}
	var changes []string
	for _, e := range m.Events {
		if e.Kind == strategies.EventJoin || e.Kind == strategies.EventLeave {
			if e.TimeS < pushed.Seconds()-0.2 || e.TimeS > pushed.Seconds()+0.2 {
				t.Errorf("%s of instance %d at %.2f s, the push at %.2f s", e.Kind, e.Instance, e.TimeS, pushed.Seconds())
			}
			changes = append(changes, fmt.Sprintf("%s %d", e.Kind, e.Instance))
		}
	}
	slices.Sort(changes)
	if want := []string{"join 3", "join 3", "leave 2", "leave 2"}; !slices.Equal(changes, want) {
		t.Errorf("events %q, want %q (one of each per replica)", changes, want)
	}
	if got := m.Strategy.Instances[2].Requests; got != final2 {
		t.Errorf("the stream counts %d requests of instance 2, its server %d", got, final2)
	}
}

// TestEndpointsAPI checks the endpoints API's answers: the token as
// faultyserver's control API wants it, the methods and the path, and
// every bad body refused with the field named and the set unchanged.
func TestEndpointsAPI(t *testing.T) {
	lb, err := strategies.New("round-robin", strategies.Env{N: 3, Rand: engine.StrategySeed(1, "round-robin")})
	if err != nil {
		t.Fatal(err)
	}
	u0, _ := url.Parse("http://127.0.0.1:8080")
	u1, _ := url.Parse("http://127.0.0.1:8081")
	c := transport.NewClient([]*strategies.Balancer{lb}, []*url.URL{u0, u1, nil}, time.Second, 0)
	defer c.Close()
	if err := c.SetEndpoints(map[int]*url.URL{0: u0, 1: u1}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&endpointsAPI{c: c, n: 3, token: "s3cret"})
	defer srv.Close()
	do := func(method, path, auth, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	const unchanged = `{"endpoints":{"0":"http://127.0.0.1:8080","1":"http://127.0.0.1:8081"}}`
	for _, tc := range []struct {
		name, method, path, auth, body string
		status                         int
		want                           string // the answer, or a part of its error
	}{
		{"get", "GET", EndpointsPath, "Bearer s3cret", "", 200, unchanged},
		{"no token", "GET", EndpointsPath, "", "", 401, "missing token"},
		{"wrong token", "PUT", EndpointsPath, "Bearer nope", `{"endpoints": {}}`, 401, "wrong token"},
		{"basic", "GET", EndpointsPath, "Basic czNjcmV0", "", 401, `scheme \"Basic\"`},
		{"token in the query", "GET", EndpointsPath + "?access_token=s3cret", "Bearer s3cret", "", 401, "query string"},
		{"other path", "GET", "/fault", "Bearer s3cret", "", 404, "no endpoint /fault"},
		{"post", "POST", EndpointsPath, "Bearer s3cret", `{"endpoints": {}}`, 405, "want GET or PUT"},
		{"not JSON", "PUT", EndpointsPath, "Bearer s3cret", `endpoints`, 400, "body: "},
		{"unknown field", "PUT", EndpointsPath, "Bearer s3cret", `{"endpoint": {"0": "http://127.0.0.1:9000"}}`, 400, `unknown field \"endpoint\"`},
		{"no endpoints", "PUT", EndpointsPath, "Bearer s3cret", `{}`, 400, "endpoints: missing"},
		{"two values", "PUT", EndpointsPath, "Bearer s3cret", `{"endpoints": {}} {}`, 400, "more than one JSON value"},
		{"id not a number", "PUT", EndpointsPath, "Bearer s3cret", `{"endpoints": {"a": "http://127.0.0.1:9000"}}`, 400, `endpoints[\"a\"]: not an instance id (0 to 2)`},
		{"id not canonical", "PUT", EndpointsPath, "Bearer s3cret", `{"endpoints": {"01": "http://127.0.0.1:9000"}}`, 400, `endpoints[\"01\"]: not an instance id`},
		{"id out of range", "PUT", EndpointsPath, "Bearer s3cret", `{"endpoints": {"0": "http://127.0.0.1:9000", "3": "http://127.0.0.1:9001"}}`, 400, `endpoints[\"3\"]: no instance 3 (the run has 3: 0 to 2)`},
		{"negative id", "PUT", EndpointsPath, "Bearer s3cret", `{"endpoints": {"-1": "http://127.0.0.1:9000"}}`, 400, `endpoints[\"-1\"]: no instance -1`},
		{"no host", "PUT", EndpointsPath, "Bearer s3cret", `{"endpoints": {"2": "10.88.0.5:8080"}}`, 400, `endpoints[\"2\"]: \"10.88.0.5:8080\" is not a base URL`},
		{"a path", "PUT", EndpointsPath, "Bearer s3cret", `{"endpoints": {"2": "http://10.88.0.5:8080/app"}}`, 400, `endpoints[\"2\"]`},
		{"https", "PUT", EndpointsPath, "Bearer s3cret", `{"endpoints": {"2": "https://10.88.0.5:8443"}}`, 400, `endpoints[\"2\"]`},
		{"not a string", "PUT", EndpointsPath, "Bearer s3cret", `{"endpoints": {"2": 8080}}`, 400, "body: "},
		{"too large", "PUT", EndpointsPath, "Bearer s3cret", `{"endpoints": {"0": "` + strings.Repeat("x", faultyserver.MaxControlBody) + `"}}`, 413, "larger than"},
		{"still unchanged", "GET", EndpointsPath, "bearer s3cret", "", 200, unchanged},
		{"put", "PUT", EndpointsPath, "Bearer s3cret", `{"endpoints": {"2": "http://10.88.0.5:8080/", "1": "http://127.0.0.1:8081"}}`, 200,
			`{"endpoints":{"1":"http://127.0.0.1:8081","2":"http://10.88.0.5:8080/"}}`},
		{"put none", "PUT", EndpointsPath, "Bearer s3cret", `{"endpoints": {}}`, 200, `{"endpoints":{}}`},
	} {
		status, body := do(tc.method, tc.path, tc.auth, tc.body)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s; want %d with %s", tc.name, status, body, tc.status, tc.want)
		}
		if status >= 400 && !strings.HasPrefix(body, `{"error":`) {
			t.Errorf("%s: error body %s, want {\"error\": ...}", tc.name, body)
		}
	}
	if got := lb.Members(); got == nil || len(got) != 0 {
		t.Errorf("after putting none: members %v, want none", got)
	}
}

// TestServeEndpointsChecks: an endpoints API without a token is served
// only on a loopback address, and a port in use is an error.
func TestServeEndpointsChecks(t *testing.T) {
	lb, err := strategies.New("round-robin", strategies.Env{N: 1, Rand: engine.StrategySeed(1, "round-robin")})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("http://127.0.0.1:8080")
	c := transport.NewClient([]*strategies.Balancer{lb}, []*url.URL{u}, time.Second, 0)
	defer c.Close()
	if _, err := serveEndpoints(":0", "", c, 1); err == nil || !strings.Contains(err.Error(), faultyserver.TokenEnv) {
		t.Errorf("open on every interface: error %v, want one naming %s", err, faultyserver.TokenEnv)
	}
	if _, err := serveEndpoints("127.0.0.1:0", "bad token", c, 1); err == nil {
		t.Error("a token with a space: accepted")
	}
	stop, err := serveEndpoints("127.0.0.1:0", "", c, 1)
	if err != nil {
		t.Fatalf("open on loopback: %v", err)
	}
	stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := serveEndpoints(ln.Addr().String(), "t", c, 1); err == nil {
		t.Errorf("%s in use: no error", ln.Addr())
	}
}

// TestGenerateEndpointsErrors: what Generate refuses of the endpoints
// API's settings before it starts anything.
func TestGenerateEndpointsErrors(t *testing.T) {
	exp := runtest.MustExperiment(t, "endpoints-errors", `
duration: 1s
rate: 10
instances: {count: 2, service: {dist: fixed, value: 1ms}}
strategies: [p2c, "lbchaos:round-robin"]
`)
	u, _ := url.Parse("http://127.0.0.1:8080")
	for _, tc := range []struct {
		name string
		spec GenerateSpec
		want string
	}{
		{"none without the API", GenerateSpec{Strategy: "p2c", Targets: []*url.URL{u, nil}},
			"target of instance 1: none (an instance that does not exist yet) needs the endpoints API (EndpointsListen)"},
		{"a proxy strategy", GenerateSpec{Strategy: "lbchaos:round-robin", Targets: []*url.URL{u, u}, Proxy: u, EndpointsListen: "127.0.0.1:0"},
			"strategy lbchaos:round-robin: its generators pick no instance, the proxy does: they take no endpoints (EndpointsListen)"},
		{"open on every interface", GenerateSpec{Strategy: "p2c", Targets: []*url.URL{u, nil}, EndpointsListen: ":0"},
			"endpoints API on :0: without a token (LBCHAOS_TOKEN)"},
	} {
		tc.spec.Exp, tc.spec.Start = exp, time.Now().Add(time.Hour)
		err := Generate(context.Background(), tc.spec, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %s", tc.name, err, tc.want)
		}
	}
}

// TestGenerateArgsEndpoints: a generator that picks the instances itself
// is asked to serve the endpoints API when its launcher says so, a
// proxy's never; an instance without an address is --target none.
func TestGenerateArgsEndpoints(t *testing.T) {
	exp := runtest.MustExperiment(t, "endpoints-args", `
duration: 1s
rate: 10
generators: 2
instances: {count: 2, service: {dist: fixed, value: 1ms}}
strategies: [p2c]
`)
	u, _ := url.Parse("http://10.88.0.5:8080")
	at := time.Unix(0, 0)
	args := strings.Join(generateArgs(exp, "p2c", []*url.URL{u, nil}, nil, nil, at, 10, false, ":9091"), " ")
	if !strings.Contains(args, "--target http://10.88.0.5:8080 --target none --endpoints-listen :9091") {
		t.Errorf("args %s: want the targets, none, then --endpoints-listen :9091", args)
	}
	if args := strings.Join(generateArgs(exp, "p2c", []*url.URL{u, u}, nil, nil, at, 10, false, ""), " "); strings.Contains(args, "--endpoints-listen") {
		t.Errorf("args %s: --endpoints-listen without a launcher asking for it", args)
	}
	if args := strings.Join(generateArgs(exp, "lbchaos:p2c", []*url.URL{u, u}, u, nil, at, 10, false, ":9091"), " "); strings.Contains(args, "--endpoints-listen") {
		t.Errorf("args %s: --endpoints-listen for a proxy strategy", args)
	}
	if got := endpointsListen(LocalLauncher{}); got != "" {
		t.Errorf("local processes: endpoints %q, want none", got)
	}
	if got := endpointsListen(endpointsLauncher{LocalLauncher{}}); got != fmt.Sprintf(":%d", EndpointsPort) {
		t.Errorf("a launcher asking for them: endpoints %q", got)
	}
}

// endpointsLauncher is a launcher whose generators serve the endpoints
// API on EndpointsPort.
type endpointsLauncher struct{ LocalLauncher }

func (endpointsLauncher) EndpointsListen() string { return fmt.Sprintf(":%d", EndpointsPort) }
