package experiments

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/lbchaos/lbchaos/faultyserver"
)

// file is the on-disk shape. Durations are strings so that errors can name
// the field; nested free-form objects are decoded by their owners.
type file struct {
	Name          string        `yaml:"name"`
	Description   string        `yaml:"description"`
	Seed          *uint64       `yaml:"seed"`
	Duration      string        `yaml:"duration"`
	Arrival       string        `yaml:"arrival"`
	Rate          *fileRate     `yaml:"rate"`
	Timeout       string        `yaml:"timeout"`
	SlowThreshold string        `yaml:"slow_threshold"`
	Instances     *fileFleet    `yaml:"instances"`
	Faults        []fileFault   `yaml:"faults"`
	Strategies    []string      `yaml:"strategies"`
	Keys          *fileKeys     `yaml:"keys"`
	Requests      *fileRequests `yaml:"requests"`
	Replicas      *int          `yaml:"replicas"`
	Generators    *int          `yaml:"generators"`
	Protocol      string        `yaml:"protocol"`
	Connections   *int          `yaml:"connections"`
	KeepAlive     *bool         `yaml:"keepalive"`
	KeyMetric     string        `yaml:"key_metric"`
	Expect        yaml.Node     `yaml:"expect"`
	Abort         yaml.Node     `yaml:"abort"`
	Tiers         []fileTier    `yaml:"tiers"`
	Zones         []fileZone    `yaml:"zones"`
	CrossZone     string        `yaml:"cross_zone_latency"`
}

type fileFleet struct {
	Count         int                    `yaml:"count"`
	Workers       *int                   `yaml:"workers"`
	QueueLimit    *int                   `yaml:"queue_limit"`
	KeepAbandoned *bool                  `yaml:"keep_abandoned"`
	ResponseBytes *faultyserver.ByteSize `yaml:"response_bytes"`
	Service       yaml.Node              `yaml:"service"`
	Groups        []fileGroup            `yaml:"groups"`
	External      []fileExternal         `yaml:"external"`
	Health        string                 `yaml:"health"`
	App           *fileApp               `yaml:"app"`
	Readiness     *fileReadiness         `yaml:"readiness"`
	Shutdown      *fileShutdown          `yaml:"shutdown"`
	Kube          *fileKube              `yaml:"kube"`
}

// fileApp is instances.app: the user's own image as every instance.
type fileApp struct {
	Image   string            `yaml:"image"`
	Port    int               `yaml:"port"`
	PortEnv string            `yaml:"port_env"`
	Health  string            `yaml:"health"`
	Env     map[string]string `yaml:"env"`
	Args    []string          `yaml:"args"`
	Restart bool              `yaml:"restart"`
}

// fileExternal is one entry of instances.external: a URL, or
// {url: URL, sidecar: URL}.
type fileExternal struct {
	URL     string `yaml:"url"`
	Sidecar string `yaml:"sidecar"`
}

func (x *fileExternal) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&x.URL)
	}
	type plain fileExternal
	return n.Decode((*plain)(x))
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

// build converts the decoded file into an Experiment with every default
// filled in and validates it: Validate, then the expectations against the
// file's strategies. Errors name the field; Parse prefixes the source.
//
// dir is the directory relative paths in the file (a targets file, a proxy
// strategy's file) are resolved against; "" for an experiment built into
// the binary, which has none.
func (f *file) build(source, dir string) (*Experiment, error) {
	e := &Experiment{
		Name:        f.Name,
		Description: strings.TrimSpace(f.Description),
		Source:      source,
		Seed:        DefaultSeed,
		Arrival:     DefaultArrival,
		Strategies:  f.Strategies,
		KeyMetric:   DefaultKeyMetric,
	}
	// The file's name is the experiment's (the results folder,
	// summary.experiment): name: may be left out, and a copied file runs
	// under its new name.
	base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(source), ".yaml"), ".yml")
	switch {
	case base == "" || base == ".":
		return nil, fieldErr("name", "is required when the experiment has no file name")
	case e.Name != "" && e.Name != base:
		e.Warnings = append(e.Warnings, fmt.Sprintf("%s: name: the file says %q; it runs as %q, its file's name", source, e.Name, base))
	}
	e.Name = base
	if f.Seed != nil {
		e.Seed = *f.Seed
	}
	var err error
	if f.Rate == nil {
		return nil, fieldErr("rate", "is required (requests per second)")
	}
	if f.Rate.staged {
		if e.Profile, e.Duration, err = f.Rate.build(f.Duration); err != nil {
			return nil, err
		}
		e.Rate = e.Profile.Mean(e.Duration)
	} else {
		if e.Duration, err = duration("duration", f.Duration, 0); err != nil {
			return nil, err
		}
		if e.Duration <= 0 {
			return nil, fieldErr("duration", "must be > 0, e.g. duration: 30s; got %v", e.Duration)
		}
		e.Rate = f.Rate.Value
	}
	if f.Arrival != "" {
		e.Arrival = f.Arrival
	}
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
		Count:   f.Instances.Count,
		Workers: DefaultWorkers,
	}
	if f.Instances.Workers != nil {
		e.Instances.Workers = *f.Instances.Workers
	}
	if f.Instances.QueueLimit != nil {
		e.Instances.QueueLimit = *f.Instances.QueueLimit
	}
	if f.Instances.KeepAbandoned != nil {
		e.Instances.KeepAbandoned = *f.Instances.KeepAbandoned
	}
	if rb := f.Instances.ResponseBytes; rb != nil {
		if *rb < 0 || *rb > faultyserver.MaxResponseBytes {
			return nil, fieldErr("instances.response_bytes", "must be within [0, %s], got %s", faultyserver.ByteSize(faultyserver.MaxResponseBytes), *rb)
		}
		e.Instances.ResponseBytes = int64(*rb)
	}
	if err := f.Instances.buildApp(&e.Instances); err != nil {
		return nil, err
	}
	if f.Instances.Service.Kind != 0 {
		if err := decodeJSONNode(&f.Instances.Service, &e.Instances.Service); err != nil {
			return nil, fieldErr("instances.service", "%v", err)
		}
	}
	if err := f.Instances.buildExternal(&e.Instances); err != nil {
		return nil, err
	}
	if err := f.Instances.buildLifecycle(&e.Instances); err != nil {
		return nil, err
	}
	e.Replicas = 1
	if f.Replicas != nil {
		e.Replicas = *f.Replicas
	}
	if err := f.buildZones(e); err != nil {
		return nil, err
	}
	if len(f.Tiers) > 0 {
		err = f.buildTiers(e)
	} else {
		err = f.Instances.buildGroups(&e.Instances)
	}
	if err != nil {
		return nil, err
	}
	if e.Faults, err = buildFaults(f.Faults, e); err != nil {
		return nil, err
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
	e.Generators = 1
	if f.Generators != nil {
		e.Generators = *f.Generators
	}
	e.Protocol = DefaultProtocol
	if f.Protocol != "" {
		e.Protocol = f.Protocol
	}
	if f.Connections != nil {
		e.Connections = *f.Connections
	} else if e.Protocol != ProtocolHTTP1 {
		e.Connections = DefaultConnections
	}
	if f.KeepAlive != nil && !*f.KeepAlive {
		if e.Protocol != ProtocolHTTP1 {
			return nil, fieldErr("keepalive", "false applies to protocol http1 (a connection per request); %s multiplexes requests onto its connections", e.Protocol)
		}
		e.NoKeepAlive = true
	}
	if f.Keys != nil {
		if e.Keys, err = f.Keys.build(); err != nil {
			return nil, err
		}
	}
	if f.Requests != nil {
		if e.Requests, err = f.Requests.build(dir); err != nil {
			return nil, err
		}
	}
	if f.KeyMetric != "" {
		e.KeyMetric = f.KeyMetric
	}
	if e.ProxyFiles, err = resolveProxyFiles(e.Strategies, dir, nil, func(i int) string { return fmt.Sprintf("strategies[%d]", i) }); err != nil {
		return nil, err
	}
	if e.Abort, err = parseAborts(&f.Abort); err != nil {
		return nil, err
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	if e.Expect, err = parseExpectations(&f.Expect, e.Strategies); err != nil {
		return nil, err
	}
	return e, nil
}

// buildApp fills in.App. The service has its own workers and queue, so
// the fake server's settings are refused beside it; service stays allowed
// as the simulator's model.
func (f *fileFleet) buildApp(in *Instances) error {
	if f.App == nil {
		return nil
	}
	a := f.App
	why := "instances.app runs your own service, which has its own"
	switch {
	case len(f.External) > 0:
		return fieldErr("instances.app", "and instances.external both say where the instances come from; keep one: app starts your image, external points at instances that already run")
	case f.Workers != nil:
		return fieldErr("instances.workers", "does not apply with instances.app (%s workers); leave it out", why)
	case f.QueueLimit != nil:
		return fieldErr("instances.queue_limit", "does not apply with instances.app (%s queue); leave it out", why)
	case f.KeepAbandoned != nil:
		return fieldErr("instances.keep_abandoned", "does not apply with instances.app (a client that goes away cancels its request through the sidecar); leave it out")
	case f.ResponseBytes != nil:
		return fieldErr("instances.response_bytes", "does not apply with instances.app (your service's answers are forwarded as they are); leave it out")
	}
	for i, g := range f.Groups {
		if g.Workers != nil {
			return fieldErr(fmt.Sprintf("instances.groups[%d].workers", i), "does not apply with instances.app (%s workers); leave it out", why)
		}
	}
	in.App = &App{Image: a.Image, Port: a.Port, PortEnv: a.PortEnv, Health: a.Health, Env: a.Env, Args: a.Args, Restart: a.Restart}
	if in.App.Health == "" {
		in.App.Health = DefaultHealthPath
	}
	return nil
}

// buildExternal fills in.External and in.HealthPath; the fleet has one
// instance per URL.
func (f *fileFleet) buildExternal(in *Instances) error {
	if len(f.External) == 0 {
		if f.Health != "" {
			return fieldErr("instances.health", "applies to instances.external only")
		}
		return nil
	}
	for _, x := range f.External {
		in.External = append(in.External, External(x))
	}
	in.HealthPath = f.Health
	if in.HealthPath == "" {
		in.HealthPath = DefaultHealthPath
	}
	switch {
	case in.Count == 0:
		in.Count = len(in.External)
	case in.Count != len(in.External):
		return fieldErr("instances.count", "is %d but instances.external lists %d instances; leave count out or make them agree", in.Count, len(in.External))
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
		} else if f.Service.Kind == 0 && f.App == nil {
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

// build returns the key spec as written, with the hot key's share
// required when hot is given; Validate checks the ranges.
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
