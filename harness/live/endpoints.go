package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/transport"
)

// A generator's endpoints API: a generator started with --endpoints-listen
// (GenerateSpec.EndpointsListen) serves it while it runs, and its
// coordinator, which watches where the instances are (a Deployment's
// EndpointSlices under a rolling restart), gives it the instances' current
// endpoints there (PushEndpoints). Its built-in strategy then picks only
// among them, as a client-side balancer follows the endpoints its
// discovery (xDS EDS, a Kubernetes resolver) gives it.
//
//	PUT EndpointsPath  {"endpoints": {"0": "http://10.88.0.5:8080", "7": "http://10.88.0.9:8080"}}
//	GET EndpointsPath
//
// A PUT body is the whole current set, instance id to base URL, not a
// change of it; both answer 200 with the set now in force, in the same
// form. A bad body, id or URL is answered 400 with {"error": "..."} naming
// the field, and changes nothing. Every request must carry the run's
// control token as faultyserver's control API requires it
// (Authorization: Bearer <token>); a generator without one serves the API
// only on a loopback address.

// EndpointsPort is the port a generator pod serves its endpoints API on
// (lbchaos generate --endpoints-listen :9091).
const EndpointsPort = 9091

// EndpointsPath is the endpoints API's path: under the control API's
// prefix, as it takes the run's token as the control API does.
const EndpointsPath = faultyserver.ControlPrefix + "endpoints"

// EndpointsLauncher is an engine.Launcher whose coordinator gives its
// generators the instances' current endpoints (PushEndpoints): each
// generator of a strategy that picks the instances itself is started
// with --endpoints-listen EndpointsListen() (such as ":9091", see
// EndpointsPort); "" starts them without.
type EndpointsLauncher interface {
	engine.Launcher
	EndpointsListen() string
}

// endpointsListen is the address l's generators serve their endpoints
// API on; "" when they serve none.
func endpointsListen(l engine.Launcher) string {
	if el, ok := l.(EndpointsLauncher); ok {
		return el.EndpointsListen()
	}
	return ""
}

// EndpointSet is the body of the endpoints API: instance id (decimal) to
// base URL.
type EndpointSet struct {
	Endpoints map[string]string `json:"endpoints"`
}

// PushEndpoints gives the generator whose endpoints API is at base (such
// as "http://10.88.0.7:9091", or a port-forward's address) the instances'
// current endpoints, eps: instance id to base URL, the whole set. token is
// the run's control token ("" for none), sent as faultyserver.Client
// sends it. client nil means one with a faultyserver.DefaultClientTimeout
// timeout. An answer other than 200 is a *faultyserver.APIError with the
// generator's explanation.
func PushEndpoints(ctx context.Context, client *http.Client, base, token string, eps map[int]*url.URL) error {
	set := EndpointSet{Endpoints: make(map[string]string, len(eps))}
	for id, u := range eps {
		if u == nil {
			return fmt.Errorf("push endpoints: instance %d has no URL", id)
		}
		set.Endpoints[strconv.Itoa(id)] = u.String()
	}
	body, err := json.Marshal(set)
	if err != nil {
		return fmt.Errorf("push endpoints: %w", err)
	}
	if client == nil {
		client = &http.Client{Timeout: faultyserver.DefaultClientTimeout}
	}
	c := &faultyserver.Client{BaseURL: base, Token: token, HTTP: client}
	return c.Do(ctx, "push endpoints", http.MethodPut, EndpointsPath, body, http.StatusOK, nil)
}

// endpointsAPI serves a generator's endpoints API for the client c of n
// instances.
type endpointsAPI struct {
	c     *transport.Client
	n     int
	token string // "" = open
}

// CheckEndpointsListen reports why a generator cannot serve its endpoints
// API on listen with token: a token that is not one, or none on an
// address other than loopback.
func CheckEndpointsListen(listen, token string) error {
	if err := faultyserver.CheckToken(token); err != nil {
		return fmt.Errorf("%s: the token in %s: %w", listen, faultyserver.TokenEnv, err)
	}
	if err := faultyserver.CheckControlListen(listen, token, false); errors.Is(err, faultyserver.ErrOpenControl) {
		return fmt.Errorf("%s: without a token (%s) anyone who reaches it could steer the load; give the run's token in %s, or listen on 127.0.0.1", listen, faultyserver.TokenEnv, faultyserver.TokenEnv)
	}
	return nil
}

// serveEndpoints serves the endpoints API of c (n instances) on listen
// until stop is called, which returns once nothing of it runs any more.
// Without a token, listen must be a loopback address.
func serveEndpoints(listen, token string, c *transport.Client, n int) (stop func(), err error) {
	if err := CheckEndpointsListen(listen, token); err != nil {
		return nil, fmt.Errorf("endpoints API on %w", err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("endpoints API: %w", err)
	}
	srv := &http.Server{Handler: &endpointsAPI{c: c, n: n, token: token}, ReadHeaderTimeout: 10 * time.Second}
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(ln) })
	return func() {
		// Let a request under way end, but not hold the generator up.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close()
		}
		wg.Wait()
	}, nil
}

func (a *endpointsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !faultyserver.Authorize(a.token, w, r) {
		return
	}
	if r.URL.Path != EndpointsPath {
		faultyserver.WriteError(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s (have %s)", r.URL.Path, EndpointsPath))
		return
	}
	switch r.Method {
	case http.MethodGet:
	case http.MethodPut:
		eps, status, err := a.parse(w, r)
		if err != nil {
			faultyserver.WriteError(w, status, err.Error())
			return
		}
		if err := a.c.SetEndpoints(eps); err != nil {
			faultyserver.WriteError(w, http.StatusBadRequest, "endpoints: "+err.Error())
			return
		}
	default:
		w.Header().Set("Allow", "GET, PUT")
		faultyserver.WriteError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s: want GET or PUT", r.Method))
		return
	}
	set := EndpointSet{Endpoints: map[string]string{}}
	for id, u := range a.c.Endpoints() {
		set.Endpoints[strconv.Itoa(id)] = u.String()
	}
	faultyserver.WriteJSON(w, http.StatusOK, set)
}

// parse reads a PUT's endpoint set; on error, status is the answer's.
func (a *endpointsAPI) parse(w http.ResponseWriter, r *http.Request) (eps map[int]*url.URL, status int, err error) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, faultyserver.MaxControlBody))
	dec.DisallowUnknownFields()
	var set EndpointSet
	if err := dec.Decode(&set); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body: larger than %d bytes", faultyserver.MaxControlBody)
		}
		return nil, http.StatusBadRequest, fmt.Errorf("body: %w", err)
	}
	if dec.More() {
		return nil, http.StatusBadRequest, errors.New("body: more than one JSON value")
	}
	if set.Endpoints == nil {
		return nil, http.StatusBadRequest, errors.New(`endpoints: missing; want {"endpoints": {"<instance id>": "<base URL>", ...}}, the whole current set`)
	}
	eps = make(map[int]*url.URL, len(set.Endpoints))
	for _, key := range slices.Sorted(maps.Keys(set.Endpoints)) {
		id, err := strconv.Atoi(key)
		if err != nil || strconv.Itoa(id) != key {
			return nil, http.StatusBadRequest, fmt.Errorf("endpoints[%q]: not an instance id (0 to %d)", key, a.n-1)
		}
		if id < 0 || id >= a.n {
			return nil, http.StatusBadRequest, fmt.Errorf("endpoints[%q]: no instance %d (the run has %d: 0 to %d)", key, id, a.n, a.n-1)
		}
		raw := set.Endpoints[key]
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, http.StatusBadRequest, fmt.Errorf("endpoints[%q]: %q is not a base URL such as http://10.88.0.5:8080 (http, a host, no path)", key, raw)
		}
		eps[id] = u
	}
	return eps, 0, nil
}
