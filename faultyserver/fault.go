package faultyserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
)

// A Fault is a misbehaviour of one instance. Implementations are plain
// parameter structs with JSON tags, one file per mode, each registered with
// its defaults in an init function; the JSON form of a fault is its
// parameters plus "mode" (see ParseFault and MarshalFault).
//
// Faults are values: they hold no state, so the same Fault may be planned
// concurrently by several servers or by a simulator.
type Fault interface {
	// Mode is the word naming this fault in the control API and in
	// experiment files.
	Mode() string
	// Validate reports the first bad parameter; the message starts with the
	// parameter's JSON name, e.g. `p: must be within [0,1], got 1.5`.
	Validate() error
	// Plan decides what happens to one request arriving under this fault.
	// base is the service time sampled for the request as if no fault were
	// active; every random choice is drawn from r.
	Plan(base time.Duration, r *rand.Rand) Action
	// HealthStatus is the status /healthz answers under this fault.
	HealthStatus() int
}

// ActionKind is what a server does with one request.
type ActionKind int

// Action kinds.
const (
	// ActionServe occupies a worker for Action.Service, then answers 200.
	ActionServe ActionKind = iota
	// ActionFail waits Action.Delay without occupying a worker, then
	// answers Action.Status.
	ActionFail
	// ActionHang never answers: the request ends when its client gives up
	// or the server closes. It occupies no worker.
	ActionHang
	// ActionReset ends the request without a response: its stream, or
	// with Action.WholeConn its connection.
	ActionReset
)

var actionNames = [...]string{"serve", "fail", "hang", "reset"}

// String returns the lower-case name of k.
func (k ActionKind) String() string {
	if k >= 0 && int(k) < len(actionNames) {
		return actionNames[k]
	}
	return fmt.Sprintf("ActionKind(%d)", int(k))
}

// Action is the plan for one request.
//
// A proxy in front of a real service (see [Sidecar]) reads an ActionServe
// from [PlanProxy] as: wait Service before forwarding, then hold the
// upstream's answer until Scale times the upstream's own time has passed
// since forwarding. The other kinds mean what they mean on the server.
type Action struct {
	Kind    ActionKind
	Service time.Duration // ActionServe: time spent on a worker; on a proxy, added before forwarding
	Delay   time.Duration // ActionFail: wait before answering, without a worker
	Status  int           // ActionFail: status answered
	Scale   float64       // ActionServe, proxies only: multiplies the upstream's time; <= 1 holds nothing
	// GRPCCode, for ActionFail, is the gRPC status a gRPC call is answered
	// with; codes.OK means the default, UNAVAILABLE.
	GRPCCode codes.Code
	// WholeConn, for ActionReset, closes the request's whole connection
	// (every HTTP/2 stream on it), not only its stream.
	WholeConn bool
	// Latency, for every kind, is a wait before the plan is carried out,
	// holding no worker: a delay on the request's way in (a latency fault
	// per request).
	Latency time.Duration
	// Cut, for ActionServe, cuts the answer off after CutAfter bytes of
	// its body: its connection is closed there, or reset with CutReset
	// (see Cut, the fault).
	Cut      bool
	CutAfter int64
	CutReset bool
}

// A ProxyPlanner is a fault whose plan changes the service time, which a
// proxy does not know until the upstream has answered. Every fault whose
// Plan serves a request for anything but base itself implements it; the
// others plan the same for a proxy as for the server.
type ProxyPlanner interface {
	Fault
	// PlanProxy decides what happens to one request a proxy forwards under
	// this fault, drawing every random choice from r exactly as Plan does.
	PlanProxy(r *rand.Rand) Action
}

// PlanProxy is the plan for one request arriving at a proxy under fault f
// (nil: none): f's own PlanProxy when it has one, else its Plan for a
// service time of zero, so that a request the server would serve for its
// service time is forwarded with nothing added.
func PlanProxy(f Fault, r *rand.Rand) Action {
	if f == nil {
		return Action{Kind: ActionServe}
	}
	if p, ok := f.(ProxyPlanner); ok {
		return p.PlanProxy(r)
	}
	return f.Plan(0, r)
}

// Health holds the health_status parameter every fault accepts; embed it in
// a fault's parameter struct.
type Health struct {
	// Status is what /healthz answers under the fault; 0 means 200.
	Status int `json:"health_status,omitempty"`
}

// HealthStatus returns h.Status, or 200 when it is 0.
func (h Health) HealthStatus() int {
	if h.Status == 0 {
		return 200
	}
	return h.Status
}

// healthOverride returns the health_status set, if any.
func (h Health) healthOverride() (int, bool) { return h.Status, h.Status != 0 }

// HealthOverride reports the health_status f sets explicitly (nil: none).
// Without one, a proxy leaves /healthz to its upstream.
func HealthOverride(f Fault) (int, bool) {
	if h, ok := f.(interface{ healthOverride() (int, bool) }); ok {
		return h.healthOverride()
	}
	return 0, false
}

func (h Health) validate() error {
	if h.Status != 0 && (h.Status < 200 || h.Status > 599) {
		return fmt.Errorf("health_status: must be within [200,599], got %d", h.Status)
	}
	return nil
}

// mode is one registered fault mode.
type mode struct {
	name   string
	fields []string                                        // JSON parameter names, sorted
	decode func(map[string]json.RawMessage) (Fault, error) // starts from the defaults
}

var modes = map[string]mode{}

// register adds a fault mode. defaults is the value ParseFault starts from,
// so parameters omitted from the JSON keep their default. T must be a
// struct type whose exported fields all carry JSON tags.
func register[T Fault](defaults T) {
	name := defaults.Mode()
	if _, dup := modes[name]; dup {
		panic("faultyserver: fault mode registered twice: " + name)
	}
	fields := jsonFields(reflect.TypeFor[T]())
	sort.Strings(fields)
	modes[name] = mode{
		name:   name,
		fields: fields,
		decode: func(params map[string]json.RawMessage) (Fault, error) {
			v := defaults
			for _, key := range sortedKeys(params) {
				if !slices.Contains(fields, key) {
					return nil, fmt.Errorf("%s: unknown parameter for mode %q (takes %s)", fieldName(key), name, strings.Join(fields, ", "))
				}
				// One key at a time, so every decoding error names its field.
				obj, err := json.Marshal(map[string]json.RawMessage{key: params[key]})
				if err != nil {
					return nil, fmt.Errorf("%s: %v", key, err)
				}
				dec := json.NewDecoder(bytes.NewReader(obj))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&v); err != nil {
					return nil, fmt.Errorf("%s: %s", key, decodeMessage(err))
				}
			}
			return v, nil
		},
	}
}

// jsonFields lists the JSON names of t's fields, descending into embedded
// structs.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-" || !f.IsExported():
		case f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct:
			out = append(out, jsonFields(f.Type)...)
		case tag == "":
			panic(fmt.Sprintf("faultyserver: field %s.%s has no json tag", t, f.Name))
		default:
			out = append(out, tag)
		}
	}
	return out
}

// fieldName is key as an error message starts with it: quoted unless it
// is a plain name, so that an empty key or one holding ":" or blanks still
// reads as the field at fault.
func fieldName(key string) string {
	plain := key != "" && strings.IndexFunc(key, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.')
	}) < 0
	if plain {
		return key
	}
	return strconv.Quote(key)
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// decodeMessage rewords a JSON decoding error about a single field.
func decodeMessage(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("want %s, got %s", typeWord(te.Type), te.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func typeWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	}
	return t.String()
}

// FaultModes returns the registered mode names, sorted.
func FaultModes() []string {
	names := make([]string, 0, len(modes))
	for name := range modes {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// ParseFault decodes a fault from a JSON object {"mode": "...", params...}
// and validates it. Omitted parameters take the mode's defaults. Malformed
// JSON, a missing or unknown mode, a parameter the mode does not take, a
// value of the wrong type and a value failing [Fault.Validate] are all
// errors; each names the field at fault.
func ParseFault(data []byte) (Fault, error) {
	var params map[string]json.RawMessage
	if err := json.Unmarshal(data, &params); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("fault: want a JSON object, got %s", te.Value)
		}
		return nil, fmt.Errorf("fault: malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if params == nil {
		return nil, errors.New("fault: want a JSON object, got null")
	}
	known := strings.Join(FaultModes(), ", ")
	raw, ok := params["mode"]
	if !ok {
		return nil, fmt.Errorf("mode: required, one of %s", known)
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil {
		return nil, fmt.Errorf("mode: want a string, got %s", raw)
	}
	m, ok := modes[name]
	if !ok {
		return nil, fmt.Errorf("mode: unknown mode %q, want one of %s", name, known)
	}
	delete(params, "mode")
	f, err := m.decode(params)
	if err != nil {
		return nil, err
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f, nil
}

// MarshalFault encodes f as the JSON object ParseFault reads: "mode" first,
// then f's parameters.
func MarshalFault(f Fault) ([]byte, error) {
	if f == nil {
		return nil, errors.New("faultyserver: marshal nil fault")
	}
	params, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	if len(params) < 2 || params[0] != '{' {
		return nil, fmt.Errorf("faultyserver: fault %q does not encode as a JSON object", f.Mode())
	}
	mode, err := json.Marshal(f.Mode())
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`{"mode":`)
	b.Write(mode)
	if rest := params[1:]; rest[0] != '}' {
		b.WriteByte(',')
		b.Write(rest)
	} else {
		b.WriteByte('}')
	}
	return b.Bytes(), nil
}

// Describe returns a one-line description of f: its mode followed by the
// parameters of its JSON form in declaration order, e.g.
// "fail status=503 delay=1ms". A nil f is "none".
func Describe(f Fault) string {
	if f == nil {
		return "none"
	}
	params, err := json.Marshal(f)
	if err != nil {
		return f.Mode()
	}
	var b strings.Builder
	b.WriteString(f.Mode())
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // {
		return f.Mode()
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			break
		}
		var val any
		if err := dec.Decode(&val); err != nil {
			break
		}
		fmt.Fprintf(&b, " %v=%v", key, val)
	}
	return b.String()
}
