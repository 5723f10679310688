// Package experiments loads and validates experiment files.
//
// An experiment file (YAML) names its instances, their service-time model,
// the arrival process and rate, duration, request timeout, slow threshold,
// a fault schedule, the strategies to compare and the seed. The shipped
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
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lbchaos/lbchaos/faultyserver"
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
	Raw           []byte   // the file's content
}

// Instances describes the fleet of identical backends.
type Instances struct {
	Count         int
	Workers       int // 0 = unlimited
	QueueLimit    int // 0 = unbounded
	KeepAbandoned bool
	Service       faultyserver.Dist
}

// Fault is one entry of the fault schedule: instance Instance gets Spec At
// after the attack starts, until Until (0 = until the end of the attack).
type Fault struct {
	Instance int
	At       time.Duration
	Until    time.Duration
	Spec     faultyserver.Fault
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
}

type fileFleet struct {
	Count         int       `yaml:"count"`
	Workers       *int      `yaml:"workers"`
	QueueLimit    int       `yaml:"queue_limit"`
	KeepAbandoned bool      `yaml:"keep_abandoned"`
	Service       yaml.Node `yaml:"service"`
}

type fileFault struct {
	Instance *int      `yaml:"instance"`
	At       string    `yaml:"at"`
	Until    string    `yaml:"until"`
	Fault    yaml.Node `yaml:"fault"`
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
	if f.Instances.Service.Kind == 0 {
		return nil, fieldErr("instances.service", "is required, e.g. {dist: fixed, value: 10ms}")
	}
	if err := decodeJSONNode(&f.Instances.Service, &e.Instances.Service); err != nil {
		return nil, fieldErr("instances.service", "%v", err)
	}
	for i, ff := range f.Faults {
		name := fmt.Sprintf("faults[%d]", i)
		if ff.Instance == nil {
			return nil, fieldErr(name+".instance", "is required")
		}
		flt := Fault{Instance: *ff.Instance}
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
		e.Faults = append(e.Faults, flt)
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return e, nil
}

// Validate checks every field's range and the cross-field rules. It is run
// by Parse and again after command-line overrides.
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
	if err := e.Instances.Service.Validate(); err != nil {
		return fieldErr("instances.service", "%v", err)
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
				return fieldErr(name, "overlaps faults[%d] on instance %d; one instance has one fault at a time", j, f.Instance)
			}
		}
	}
	seen := map[string]int{}
	for i, s := range e.Strategies {
		name := fmt.Sprintf("strategies[%d]", i)
		if _, err := strategies.Parse(s); err != nil {
			return fieldErr(name, "%v", err)
		}
		if j, dup := seen[s]; dup {
			return fieldErr(name, "%q is listed twice (also strategies[%d])", s, j)
		}
		seen[s] = i
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
// error names the flag.
func (e *Experiment) Apply(o Overrides) (*Experiment, error) {
	c := *e
	c.Faults = slices.Clone(e.Faults)
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
