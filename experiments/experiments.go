// Package experiments loads and validates experiment files.
//
// An experiment file (YAML) names its instances, their service-time model,
// the arrival process and rate, duration, request timeout, slow threshold,
// a fault schedule, the strategies to compare and the seed, and optionally
// the metric the experiment exists to show (key_metric) and expectations
// about the strategies' outcomes (expect) that a run checks. The shipped
// experiments are embedded in the binary; a user's own file loads the same
// way from disk. Loading rejects a bad file with an error that names the
// file, the field and why.
package experiments

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies"
)

//go:embed *.yaml
var shipped embed.FS

// Defaults applied to fields an experiment file leaves out.
const (
	DefaultWorkers       = 8
	DefaultTimeout       = 30 * time.Second
	DefaultSlowThreshold = time.Second
	DefaultArrival       = ArrivalPoisson
	DefaultSeed          = 1
)

// DefaultKeyMetric is the key metric of a file that names none.
const DefaultKeyMetric = reports.DefaultKeyMetric

// Arrival processes.
const (
	ArrivalPoisson  = "poisson"  // exponentially distributed gaps at the mean rate
	ArrivalConstant = "constant" // evenly spaced requests
)

// Experiment is a validated experiment with every default filled in.
type Experiment struct {
	Name          string
	Description   string
	Source        string // where it was loaded from, for messages
	Seed          uint64
	Duration      time.Duration
	Arrival       string
	Rate          float64 // requests per second
	Timeout       time.Duration
	SlowThreshold time.Duration
	Instances     Instances
	Faults        []Fault
	Strategies    []string // strategy specs as written, e.g. "least-inflight+eject(consecutive=5,duration=5s)"
	// Keys, when set, makes the load generator give every request an
	// affinity key drawn from this distribution (see KeySpec).
	Keys *KeySpec
	// Replicas splits the load evenly across this many independent
	// balancers of each strategy, each seeing only its own in-flight
	// counts (1 = one balancer).
	Replicas int
	// KeyMetric is the metric the experiment exists to show, one of
	// KeyMetrics(); DefaultKeyMetric when the file names none.
	KeyMetric string
	// Expect are the file's expectations, in file order. Each names one
	// of the file's strategies; after Apply with other strategies some
	// may name a strategy that is not run.
	Expect []Expectation
	Raw    []byte // the file's content
}

// Expectation is a claim about one strategy's outcome: its Metric compared
// with Value by Op holds, e.g. error_ratio < 0.005.
type Expectation struct {
	Strategy string  // a strategy spec exactly as in the file's strategies
	Metric   string  // one of Metrics()
	Op       string  // one of Ops()
	Value    float64 // finite
}

// Holds reports whether got satisfies the expectation's comparison. It is
// false for an unknown Op and for a NaN got.
func (x Expectation) Holds(got float64) bool {
	switch x.Op {
	case "<":
		return got < x.Value
	case "<=":
		return got <= x.Value
	case ">":
		return got > x.Value
	case ">=":
		return got >= x.Value
	}
	return false
}

// String returns the comparison as an experiment file writes it, e.g.
// "error_ratio < 0.005".
func (x Expectation) String() string {
	return x.Metric + " " + x.Op + " " + strconv.FormatFloat(x.Value, 'g', -1, 64)
}

// ops are the comparisons of Ops(); two-character ones first, for parsing.
var ops = []string{"<=", ">=", "<", ">"}

// Ops returns the comparisons an expectation can use.
func Ops() []string { return []string{"<", "<=", ">", ">="} }

// Instances describes the fleet. Workers and Service are the defaults;
// Each holds every instance's own settings (len Count), which differ from
// them for instances of a group.
type Instances struct {
	Count         int
	Workers       int // 0 = unlimited
	QueueLimit    int // 0 = unbounded
	KeepAbandoned bool
	Service       faultyserver.Dist
	Each          []Instance
}

// Instance is one instance's settings.
type Instance struct {
	Workers int // 0 = unlimited
	Service faultyserver.Dist
	// Weight is the instance's configured weight for weighted strategies
	// (default 1).
	Weight float64
	// JoinAt is when the instance joins the balancers' host set; 0 = from
	// the start. Before it joins it gets no traffic.
	JoinAt time.Duration
	// Warmup is how long after joining its service time is multiplied by
	// WarmupFactor (cold caches); 0 = no warm-up. It is run as a slow
	// fault, so it shows in the fault windows.
	Warmup       time.Duration
	WarmupFactor float64
}

// Instance returns instance id's settings.
func (in Instances) Instance(id int) Instance {
	if id >= 0 && id < len(in.Each) {
		return in.Each[id]
	}
	return Instance{Workers: in.Workers, Service: in.Service, Weight: 1}
}

// Heterogeneous reports whether instances differ in workers, service time
// or weight.
func (in Instances) Heterogeneous() bool {
	for _, e := range in.Each {
		if e.Workers != in.Workers || e.Service != in.Service || e.Weight != 1 {
			return true
		}
	}
	return false
}

// Weights returns every instance's weight, or nil when all are 1.
func (in Instances) Weights() []float64 {
	var ws []float64
	for id := range in.Count {
		if in.Instance(id).Weight != 1 {
			ws = make([]float64, in.Count)
			break
		}
	}
	for id := range ws {
		ws[id] = in.Instance(id).Weight
	}
	return ws
}

// Joining returns the ids of instances that join after the start, by
// JoinAt then id.
func (in Instances) Joining() []int {
	var ids []int
	for id := range in.Count {
		if in.Instance(id).JoinAt > 0 {
			ids = append(ids, id)
		}
	}
	slices.SortStableFunc(ids, func(a, b int) int {
		return int(in.Instance(a).JoinAt - in.Instance(b).JoinAt)
	})
	return ids
}

// Key distributions.
const (
	KeysUniform  = "uniform"  // every key of N equally likely
	KeysZipf     = "zipf"     // key i (0-based) with probability proportional to 1/(i+1)^S
	KeysSequence = "sequence" // request number mod N
)

// KeySpec is how the load generator draws request keys: from Dist over
// keys 0..N-1; from HotFrom on (until HotUntil, 0 = the end), HotKey takes
// a HotShare of all requests on top.
type KeySpec struct {
	Dist     string
	N        int
	S        float64 // zipf exponent, > 0
	HotKey   uint64
	HotShare float64 // 0 = no hot key
	HotFrom  time.Duration
	HotUntil time.Duration
}

// Fault is one entry of the fault schedule: instance Instance gets Spec At
// after the attack starts, until Until (0 = until the end of the attack).
// A file's entry naming several instances becomes one Fault per instance.
type Fault struct {
	Instance int
	At       time.Duration
	Until    time.Duration
	Spec     faultyserver.Fault
	// Warmup marks the slow fault that models a joining instance's warm-up.
	Warmup bool
}

// FaultyInstances returns the sorted ids of instances that have any fault.
func (e *Experiment) FaultyInstances() []int {
	ids := []int{}
	for _, f := range e.Faults {
		if !slices.Contains(ids, f.Instance) {
			ids = append(ids, f.Instance)
		}
	}
	slices.Sort(ids)
	return ids
}

// NeedsContainers reports whether any fault acts on containers (pause,
// kill, cpu), which only a container backend can apply.
func (e *Experiment) NeedsContainers() bool {
	for _, f := range e.Faults {
		if faultyserver.IsContainerFault(f.Spec) {
			return true
		}
	}
	return false
}

// file is the on-disk shape. Durations are strings so that errors can name
// the field; nested free-form objects are decoded by their owners.
type file struct {
	Name          string      `yaml:"name"`
	Description   string      `yaml:"description"`
	Seed          *uint64     `yaml:"seed"`
	Duration      string      `yaml:"duration"`
	Arrival       string      `yaml:"arrival"`
	Rate          *float64    `yaml:"rate"`
	Timeout       string      `yaml:"timeout"`
	SlowThreshold string      `yaml:"slow_threshold"`
	Instances     *fileFleet  `yaml:"instances"`
	Faults        []fileFault `yaml:"faults"`
	Strategies    []string    `yaml:"strategies"`
	Keys          *fileKeys   `yaml:"keys"`
	Replicas      *int        `yaml:"replicas"`
	KeyMetric     string      `yaml:"key_metric"`
	Expect        yaml.Node   `yaml:"expect"`
}

type fileFleet struct {
	Count         int         `yaml:"count"`
	Workers       *int        `yaml:"workers"`
	QueueLimit    int         `yaml:"queue_limit"`
	KeepAbandoned bool        `yaml:"keep_abandoned"`
	Service       yaml.Node   `yaml:"service"`
	Groups        []fileGroup `yaml:"groups"`
}

type fileGroup struct {
	Count   *int        `yaml:"count"`
	Workers *int        `yaml:"workers"`
	Service yaml.Node   `yaml:"service"`
	Weight  *float64    `yaml:"weight"`
	JoinAt  string      `yaml:"join_at"`
	Warmup  *fileWarmup `yaml:"warmup"`
}

type fileWarmup struct {
	Duration string   `yaml:"duration"`
	Factor   *float64 `yaml:"factor"`
}

type fileKeys struct {
	Dist string   `yaml:"dist"`
	N    int      `yaml:"n"`
	S    *float64 `yaml:"s"`
	Hot  *struct {
		Key   uint64   `yaml:"key"`
		Share *float64 `yaml:"share"`
		From  string   `yaml:"from"`
		Until string   `yaml:"until"`
	} `yaml:"hot"`
}

type fileFault struct {
	Instance  *int      `yaml:"instance"`
	Instances []int     `yaml:"instances"`
	At        string    `yaml:"at"`
	Until     string    `yaml:"until"`
	Fault     yaml.Node `yaml:"fault"`
}

// Names returns the names of the shipped experiments, sorted.
func Names() []string {
	entries, err := fs.Glob(shipped, "*.yaml")
	if err != nil {
		panic(err) // the pattern is constant
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e, ".yaml"))
	}
	slices.Sort(names)
	return names
}

// Load returns a shipped experiment by name, or, when ref names a file
// (contains a path separator or ends in .yaml/.yml), that file from disk.
func Load(ref string) (*Experiment, error) {
	if strings.ContainsRune(ref, '/') || strings.HasSuffix(ref, ".yaml") || strings.HasSuffix(ref, ".yml") {
		return LoadFile(ref)
	}
	data, err := shipped.ReadFile(ref + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("unknown experiment %q (shipped: %s; or give a path to a .yaml file)", ref, strings.Join(Names(), ", "))
	}
	return Parse("experiments/"+ref+".yaml", data)
}

// LoadFile reads and validates an experiment file from disk.
func LoadFile(path string) (*Experiment, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes and validates an experiment. source names the file in errors.
func Parse(source string, data []byte) (*Experiment, error) {
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty experiment file", source)
		}
		return nil, fmt.Errorf("%s: %s", source, yamlMessage(err))
	}
	e, err := f.build(source)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	e.Raw = data
	return e, nil
}

var notFound = regexp.MustCompile(`field (\S+) not found in type \S+`)

// yamlMessage rewrites yaml.v3's decoding errors for people: one line per
// problem, "line N: unknown field "x"" instead of Go type names.
func yamlMessage(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			msgs[i] = notFound.ReplaceAllString(m, `unknown field "$1"`)
		}
		return strings.Join(msgs, "; ")
	}
	return strings.TrimPrefix(err.Error(), "yaml: ")
}

func (f *file) build(source string) (*Experiment, error) {
	e := &Experiment{
		Name:        f.Name,
		Description: strings.TrimSpace(f.Description),
		Source:      source,
		Seed:        DefaultSeed,
		Arrival:     DefaultArrival,
		Strategies:  f.Strategies,
		KeyMetric:   DefaultKeyMetric,
	}
	if e.Name == "" {
		return nil, fieldErr("name", "is required")
	}
	if base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(source), ".yaml"), ".yml"); base != e.Name {
		return nil, fieldErr("name", "is %q but the file is named %q; they must match", e.Name, filepath.Base(source))
	}
	if f.Seed != nil {
		e.Seed = *f.Seed
	}
	var err error
	if e.Duration, err = duration("duration", f.Duration, 0); err != nil {
		return nil, err
	}
	if f.Arrival != "" {
		e.Arrival = f.Arrival
	}
	if f.Rate == nil {
		return nil, fieldErr("rate", "is required (requests per second)")
	}
	e.Rate = *f.Rate
	if e.Timeout, err = duration("timeout", f.Timeout, DefaultTimeout); err != nil {
		return nil, err
	}
	if e.SlowThreshold, err = duration("slow_threshold", f.SlowThreshold, DefaultSlowThreshold); err != nil {
		return nil, err
	}
	if f.Instances == nil {
		return nil, fieldErr("instances", "is required")
	}
	e.Instances = Instances{
		Count:         f.Instances.Count,
		Workers:       DefaultWorkers,
		QueueLimit:    f.Instances.QueueLimit,
		KeepAbandoned: f.Instances.KeepAbandoned,
	}
	if f.Instances.Workers != nil {
		e.Instances.Workers = *f.Instances.Workers
	}
	if f.Instances.Service.Kind != 0 {
		if err := decodeJSONNode(&f.Instances.Service, &e.Instances.Service); err != nil {
			return nil, fieldErr("instances.service", "%v", err)
		}
	} else if len(f.Instances.Groups) == 0 {
		return nil, fieldErr("instances.service", "is required, e.g. {dist: fixed, value: 10ms}")
	}
	if err := f.Instances.buildGroups(&e.Instances); err != nil {
		return nil, err
	}
	for i, ff := range f.Faults {
		name := fmt.Sprintf("faults[%d]", i)
		var ids []int
		switch {
		case ff.Instance != nil && ff.Instances != nil:
			return nil, fieldErr(name, "give instance or instances, not both")
		case ff.Instance != nil:
			ids = []int{*ff.Instance}
		case len(ff.Instances) > 0:
			ids = ff.Instances
		default:
			return nil, fieldErr(name+".instance", "is required (or instances: [ids...])")
		}
		flt := Fault{}
		if flt.At, err = duration(name+".at", ff.At, 0); err != nil {
			return nil, err
		}
		if flt.Until, err = duration(name+".until", ff.Until, 0); err != nil {
			return nil, err
		}
		if ff.Fault.Kind == 0 {
			return nil, fieldErr(name+".fault", "is required, e.g. {mode: fail, status: 503}")
		}
		raw, err := nodeJSON(&ff.Fault)
		if err != nil {
			return nil, fieldErr(name+".fault", "%v", err)
		}
		if flt.Spec, err = faultyserver.ParseFault(raw); err != nil {
			return nil, fieldErr(name+".fault", "%v", err)
		}
		for j, id := range ids {
			if slices.Contains(ids[:j], id) {
				return nil, fieldErr(name+".instances", "lists instance %d twice", id)
			}
			flt.Instance = id
			e.Faults = append(e.Faults, flt)
		}
	}
	// A joining instance's warm-up is a slow fault from its join.
	for id, in := range e.Instances.Each {
		if in.Warmup > 0 {
			e.Faults = append(e.Faults, Fault{
				Instance: id, At: in.JoinAt, Until: in.JoinAt + in.Warmup,
				Spec: faultyserver.Slow{Factor: in.WarmupFactor}, Warmup: true,
			})
		}
	}
	for id, in := range e.Instances.Each {
		if in.JoinAt >= e.Duration {
			return nil, fieldErr(fmt.Sprintf("instances (instance %d).join_at", id), "%v is not before the end of the run (duration %v)", in.JoinAt, e.Duration)
		}
	}
	e.Replicas = 1
	if f.Replicas != nil {
		e.Replicas = *f.Replicas
	}
	if f.Keys != nil {
		if e.Keys, err = f.Keys.build(); err != nil {
			return nil, err
		}
	}
	if f.KeyMetric != "" {
		e.KeyMetric = f.KeyMetric
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	if e.Expect, err = parseExpectations(&f.Expect, e.Strategies); err != nil {
		return nil, err
	}
	return e, nil
}

// parseExpectations decodes expect, a sequence of expectations (or nothing).
func parseExpectations(n *yaml.Node, strategies []string) ([]Expectation, error) {
	if n.Kind == 0 || n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, fieldErr("expect", `want a list like [{strategy: round-robin, error_ratio: "< 0.01"}], got a %s`, nodeKind(n))
	}
	var xs []Expectation
	for i, item := range n.Content {
		x, err := parseExpectation(fmt.Sprintf("expect[%d]", i), item, strategies)
		if err != nil {
			return nil, err
		}
		xs = append(xs, x)
	}
	return xs, nil
}

// parseExpectation decodes one entry of expect: a mapping of strategy and
// exactly one metric whose value is a condition "OP NUMBER". strategies are
// the file's; the entry must name one of them.
func parseExpectation(field string, n *yaml.Node, strategies []string) (Expectation, error) {
	var x Expectation
	if n.Kind != yaml.MappingNode {
		return x, fieldErr(field, `want a mapping like {strategy: round-robin, error_ratio: "< 0.01"}`)
	}
	hasStrategy := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i].Value, n.Content[i+1]
		switch {
		case key == "strategy":
			if hasStrategy {
				return x, fieldErr(field+".strategy", "is given twice")
			}
			if val.Kind != yaml.ScalarNode || val.Tag == "!!null" {
				return x, fieldErr(field+".strategy", "want one of the file's strategies (%s)", quoteAll(strategies))
			}
			x.Strategy, hasStrategy = val.Value, true
		case slices.Contains(reports.Metrics(), key):
			if x.Metric != "" {
				return x, fieldErr(field, "names two metrics, %s and %s; write one entry per metric", x.Metric, key)
			}
			x.Metric = key
			var ok bool
			if val.Kind == yaml.ScalarNode {
				x.Op, x.Value, ok = parseCondition(val.Value)
			}
			if !ok {
				got := fmt.Sprintf("%q", val.Value)
				if val.Kind != yaml.ScalarNode {
					got = "a " + nodeKind(val)
				}
				return x, fieldErr(field+"."+key, `want "OP NUMBER" like %q, got %s`, conditionExample(key), got)
			}
		default:
			return x, fieldErr(field+"."+key, "unknown metric (known: %s)", strings.Join(reports.Metrics(), ", "))
		}
	}
	switch {
	case !hasStrategy:
		return x, fieldErr(field+".strategy", "is required: one of the file's strategies (%s)", quoteAll(strategies))
	case !slices.Contains(strategies, x.Strategy):
		return x, fieldErr(field+".strategy", "%q is not one of the file's strategies (%s)", x.Strategy, quoteAll(strategies))
	case x.Metric == "":
		return x, fieldErr(field, "names no metric; add one of %s", strings.Join(reports.Metrics(), ", "))
	}
	return x, nil
}

// parseCondition parses "OP NUMBER", e.g. "< 0.005" or ">=3"; the number
// must be finite.
func parseCondition(s string) (op string, v float64, ok bool) {
	s = strings.TrimSpace(s)
	for _, op := range ops {
		if rest, found := strings.CutPrefix(s, op); found {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return "", 0, false
			}
			return op, v, true
		}
	}
	return "", 0, false
}

// conditionExample is a plausible condition on metric, for messages.
func conditionExample(metric string) string {
	switch {
	case strings.HasSuffix(metric, "_ratio") || metric == "faulty_share":
		return "> 0.05"
	case strings.HasSuffix(metric, "_ms"):
		return "< 100"
	}
	return ">= 1"
}

// nodeKind names what n holds, for messages: "mapping", "sequence",
// "alias", or a scalar's value.
func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "sequence"
	case yaml.AliasNode:
		return "alias"
	case yaml.ScalarNode:
		return fmt.Sprintf("value %q", n.Value)
	}
	return "document"
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// Validate checks every field's range and the cross-field rules. It is run
// by Parse and again after command-line overrides. That an expectation
// names one of the strategies is checked by Parse only.
func (e *Experiment) Validate() error {
	switch {
	case e.Duration <= 0:
		return fieldErr("duration", "must be > 0, got %v", e.Duration)
	case e.Arrival != ArrivalPoisson && e.Arrival != ArrivalConstant:
		return fieldErr("arrival", "must be %q or %q, got %q", ArrivalPoisson, ArrivalConstant, e.Arrival)
	case e.Rate <= 0:
		return fieldErr("rate", "must be > 0 requests per second, got %v", e.Rate)
	case e.Rate > 1e6:
		return fieldErr("rate", "%v requests per second is beyond what one machine can generate; the limit is 1000000", e.Rate)
	case e.Timeout <= 0:
		return fieldErr("timeout", "must be > 0, got %v", e.Timeout)
	case e.SlowThreshold <= 0:
		return fieldErr("slow_threshold", "must be > 0, got %v", e.SlowThreshold)
	case e.Instances.Count < 1:
		return fieldErr("instances.count", "must be >= 1, got %d", e.Instances.Count)
	case e.Instances.Count > 1000:
		return fieldErr("instances.count", "must be <= 1000, got %d", e.Instances.Count)
	case e.Instances.Workers < 0:
		return fieldErr("instances.workers", "must be >= 0 (0 = unlimited), got %d", e.Instances.Workers)
	case e.Instances.QueueLimit < 0:
		return fieldErr("instances.queue_limit", "must be >= 0 (0 = unbounded), got %d", e.Instances.QueueLimit)
	case len(e.Strategies) == 0:
		return fieldErr("strategies", "needs at least one strategy (known: %s)", strings.Join(strategies.Names(), ", "))
	}
	usesDefault := len(e.Instances.Each) == 0 || slices.ContainsFunc(e.Instances.Each, func(in Instance) bool { return in.Service == e.Instances.Service })
	if usesDefault {
		if err := e.Instances.Service.Validate(); err != nil {
			return fieldErr("instances.service", "%v", err)
		}
	}
	if len(e.Instances.Each) != 0 && len(e.Instances.Each) != e.Instances.Count {
		return fieldErr("instances", "%d instance settings for %d instances", len(e.Instances.Each), e.Instances.Count)
	}
	for id, in := range e.Instances.Each {
		name := fmt.Sprintf("instances (instance %d)", id)
		switch {
		case in.Workers < 0:
			return fieldErr(name+".workers", "must be >= 0 (0 = unlimited), got %d", in.Workers)
		case !(in.Weight > 0) || math.IsInf(in.Weight, 0):
			return fieldErr(name+".weight", "must be a number > 0, got %v", in.Weight)
		case in.JoinAt < 0:
			return fieldErr(name+".join_at", "must be >= 0, got %v", in.JoinAt)
		case in.Warmup < 0:
			return fieldErr(name+".warmup.duration", "must be >= 0, got %v", in.Warmup)
		case in.Warmup > 0 && !(in.WarmupFactor > 0):
			return fieldErr(name+".warmup.factor", "must be > 0, got %v", in.WarmupFactor)
		}
		if in.Service == e.Instances.Service {
			continue
		}
		if err := in.Service.Validate(); err != nil {
			return fieldErr(name+".service", "%v", err)
		}
	}
	if len(e.Instances.Joining()) == e.Instances.Count {
		return fieldErr("instances", "every instance has a join_at after the start; at least one must be there from the start")
	}
	if e.Replicas < 1 || e.Replicas > 64 {
		return fieldErr("replicas", "must be within [1, 64], got %d", e.Replicas)
	}
	if e.Keys != nil {
		if err := e.Keys.validate(e.Duration); err != nil {
			return err
		}
	}
	for i, f := range e.Faults {
		name := fmt.Sprintf("faults[%d]", i)
		switch {
		case f.Instance < 0 || f.Instance >= e.Instances.Count:
			return fieldErr(name+".instance", "%d is out of range: instances are 0..%d", f.Instance, e.Instances.Count-1)
		case f.At < 0:
			return fieldErr(name+".at", "must be >= 0, got %v", f.At)
		case f.At >= e.Duration:
			return fieldErr(name+".at", "%v is not before the end of the run (duration %v)", f.At, e.Duration)
		case f.Until != 0 && f.Until <= f.At:
			return fieldErr(name+".until", "%v must be after at (%v)", f.Until, f.At)
		}
		for j := range i {
			g := e.Faults[j]
			if g.Instance == f.Instance && overlaps(g, f) {
				if f.Warmup {
					return fieldErr(name, "the warm-up of instance %d overlaps faults[%d]; one instance has one fault at a time", f.Instance, j)
				}
				return fieldErr(name, "overlaps faults[%d] on instance %d; one instance has one fault at a time", j, f.Instance)
			}
		}
	}
	seen := map[string]int{}
	for i, s := range e.Strategies {
		name := fmt.Sprintf("strategies[%d]", i)
		if strategies.IsProxy(s) {
			if _, err := strategies.ParseProxy(s); err != nil {
				return fieldErr(name, "%v", err)
			}
		} else if _, err := strategies.Parse(s); err != nil {
			return fieldErr(name, "%v", err)
		}
		if j, dup := seen[s]; dup {
			return fieldErr(name, "%q is listed twice (also strategies[%d])", s, j)
		}
		seen[s] = i
	}
	if !slices.Contains(reports.KeyMetrics(), e.KeyMetric) {
		return fieldErr("key_metric", "unknown metric %q (one of %s)", e.KeyMetric, strings.Join(reports.KeyMetrics(), ", "))
	}
	for i, x := range e.Expect {
		name := fmt.Sprintf("expect[%d]", i)
		switch {
		case !slices.Contains(reports.Metrics(), x.Metric):
			return fieldErr(name, "unknown metric %q (known: %s)", x.Metric, strings.Join(reports.Metrics(), ", "))
		case !slices.Contains(ops, x.Op) || math.IsNaN(x.Value) || math.IsInf(x.Value, 0):
			return fieldErr(name+"."+x.Metric, `want "OP NUMBER" like %q, got %q`, conditionExample(x.Metric), x.Op+" "+strconv.FormatFloat(x.Value, 'g', -1, 64))
		}
	}
	return nil
}

// buildGroups fills in.Each from the groups, numbering instances in group
// order; without groups every instance has the defaults.
func (f *fileFleet) buildGroups(in *Instances) error {
	if len(f.Groups) == 0 {
		if in.Count >= 1 && in.Count <= 1000 {
			in.Each = make([]Instance, in.Count)
			for i := range in.Each {
				in.Each[i] = Instance{Workers: in.Workers, Service: in.Service, Weight: 1}
			}
		}
		return nil
	}
	var each []Instance
	for i, g := range f.Groups {
		name := fmt.Sprintf("instances.groups[%d]", i)
		c := Instance{Workers: in.Workers, Service: in.Service, Weight: 1}
		count := 1
		if g.Count != nil {
			count = *g.Count
		}
		if count < 1 || len(each)+count > 1000 {
			return fieldErr(name+".count", "must be >= 1 and the fleet at most 1000 instances, got %d", count)
		}
		if g.Workers != nil {
			c.Workers = *g.Workers
		}
		if g.Service.Kind != 0 {
			c.Service = faultyserver.Dist{}
			if err := decodeJSONNode(&g.Service, &c.Service); err != nil {
				return fieldErr(name+".service", "%v", err)
			}
		} else if f.Service.Kind == 0 {
			return fieldErr(name+".service", "is required when instances.service gives no default, e.g. {dist: fixed, value: 10ms}")
		}
		if g.Weight != nil {
			c.Weight = *g.Weight
			if !(c.Weight > 0) || math.IsInf(c.Weight, 0) {
				return fieldErr(name+".weight", "must be a number > 0, got %v", c.Weight)
			}
		}
		var err error
		if c.JoinAt, err = duration(name+".join_at", g.JoinAt, 0); err != nil {
			return err
		}
		if g.Warmup != nil {
			if c.JoinAt == 0 {
				return fieldErr(name+".warmup", "needs join_at: a warm-up starts when the instance joins")
			}
			if c.Warmup, err = duration(name+".warmup.duration", g.Warmup.Duration, 0); err != nil {
				return err
			}
			if c.Warmup <= 0 {
				return fieldErr(name+".warmup.duration", "is required and must be > 0, e.g. 10s")
			}
			if g.Warmup.Factor == nil || !(*g.Warmup.Factor > 0) || math.IsInf(*g.Warmup.Factor, 0) {
				return fieldErr(name+".warmup.factor", "is required: the service-time multiplier during warm-up, a number > 0 (e.g. 5)")
			}
			c.WarmupFactor = *g.Warmup.Factor
		}
		for range count {
			each = append(each, c)
		}
	}
	if in.Count != 0 && in.Count != len(each) {
		return fieldErr("instances.count", "is %d but the groups hold %d instances; leave count out or make them agree", in.Count, len(each))
	}
	in.Count = len(each)
	in.Each = each
	return nil
}

func (k *fileKeys) build() (*KeySpec, error) {
	ks := &KeySpec{Dist: k.Dist, N: k.N}
	if k.S != nil {
		ks.S = *k.S
	}
	if k.Hot != nil {
		ks.HotKey = k.Hot.Key
		if k.Hot.Share == nil {
			return nil, fieldErr("keys.hot.share", "is required: the share of all requests that carry the hot key, in (0, 1)")
		}
		ks.HotShare = *k.Hot.Share
		var err error
		if ks.HotFrom, err = duration("keys.hot.from", k.Hot.From, 0); err != nil {
			return nil, err
		}
		if ks.HotUntil, err = duration("keys.hot.until", k.Hot.Until, 0); err != nil {
			return nil, err
		}
	}
	return ks, nil
}

func (k *KeySpec) validate(runFor time.Duration) error {
	switch k.Dist {
	case KeysUniform, KeysSequence:
		if k.S != 0 {
			return fieldErr("keys.s", "applies to dist zipf only")
		}
	case KeysZipf:
		if !(k.S > 0) || math.IsInf(k.S, 0) {
			return fieldErr("keys.s", "is required for zipf: the exponent, a number > 0 (e.g. 1.1)")
		}
	case "":
		return fieldErr("keys.dist", "is required: %s, %s or %s", KeysUniform, KeysZipf, KeysSequence)
	default:
		return fieldErr("keys.dist", "must be %s, %s or %s, got %q", KeysUniform, KeysZipf, KeysSequence, k.Dist)
	}
	switch {
	case k.N < 1 || k.N > 10_000_000:
		return fieldErr("keys.n", "the number of distinct keys must be within [1, 10000000], got %d", k.N)
	case k.Dist == KeysZipf && k.N > 1_000_000:
		return fieldErr("keys.n", "zipf draws from a table of every key's probability; at most 1000000 keys, got %d", k.N)
	case k.HotShare < 0 || k.HotShare >= 1 || math.IsNaN(k.HotShare):
		return fieldErr("keys.hot.share", "must be in (0, 1), got %v", k.HotShare)
	case k.HotFrom < 0:
		return fieldErr("keys.hot.from", "must be >= 0, got %v", k.HotFrom)
	case k.HotUntil != 0 && k.HotUntil <= k.HotFrom:
		return fieldErr("keys.hot.until", "%v must be after from (%v)", k.HotUntil, k.HotFrom)
	}
	return nil
}

func overlaps(a, b Fault) bool {
	end := func(f Fault) time.Duration {
		if f.Until == 0 {
			return time.Duration(1<<63 - 1)
		}
		return f.Until
	}
	return a.At < end(b) && b.At < end(a)
}

func duration(field, s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		if def == 0 && field == "duration" {
			return 0, fieldErr(field, "is required, e.g. 30s")
		}
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fieldErr(field, "want a duration like \"30s\" or \"10ms\", got %q", s)
	}
	return d, nil
}

func fieldErr(field, format string, args ...any) error {
	return fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...))
}

// nodeJSON converts a YAML mapping to JSON so that its owner (the fault
// model, the service distribution) decodes it strictly with its own rules.
func nodeJSON(n *yaml.Node) ([]byte, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: want a mapping like {key: value}", n.Line)
	}
	var m map[string]any
	if err := n.Decode(&m); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

func decodeJSONNode(n *yaml.Node, v any) error {
	raw, err := nodeJSON(n)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// Overrides are command-line changes to a loaded experiment. Zero values
// leave the field as the file has it.
type Overrides struct {
	Duration   time.Duration
	Rate       float64
	Seed       *uint64
	Strategies []string
}

// Apply returns a copy of e with the overrides applied and validated; the
// error names the flag. Expectations are kept as they are, also those on a
// strategy the overrides leave out.
func (e *Experiment) Apply(o Overrides) (*Experiment, error) {
	c := *e
	c.Faults = slices.Clone(e.Faults)
	c.Expect = slices.Clone(e.Expect)
	if o.Duration != 0 {
		if o.Duration < 0 {
			return nil, fmt.Errorf("--duration: must be > 0, got %v", o.Duration)
		}
		c.Duration = o.Duration
		// Faults scheduled beyond a shortened run are dropped; the ones
		// that still start are kept (their end is clipped by the run).
		kept := c.Faults[:0]
		for _, f := range c.Faults {
			if f.At < c.Duration {
				kept = append(kept, f)
			}
		}
		c.Faults = kept
	}
	if o.Rate != 0 {
		if o.Rate < 0 {
			return nil, fmt.Errorf("--rate: must be > 0, got %v", o.Rate)
		}
		c.Rate = o.Rate
	}
	if o.Seed != nil {
		c.Seed = *o.Seed
	}
	if len(o.Strategies) > 0 {
		c.Strategies = o.Strategies
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("after command-line overrides: %w", err)
	}
	return &c, nil
}
