package faultyserver

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Flags is the command line of `lbchaos serve`. The command parses it
// (Bind, then Config), and a container provider writes it for each
// instance (Args): one definition ties the two together.
type Flags struct {
	ID            int
	Listen        string
	Workers       int
	QueueLimit    int
	Service       string // ParseDistFlag's forms
	Seed          uint64
	KeepAbandoned bool
	ResponseBytes int64  // Config.ResponseBytes
	Fault         string // JSON as the control API takes it; "" = none
	// Upstream, when set, runs a Sidecar in front of this http://host:port
	// instead of a fake server; Workers, QueueLimit, Service and
	// KeepAbandoned must then keep their defaults.
	Upstream   string
	HealthPath string // the upstream's health path; with Upstream only
	// GRPCUpstream is where a sidecar forwards gRPC calls when not to
	// Upstream; with Upstream only.
	GRPCUpstream string
	// Token is the control API's bearer token (auth.go). Args never writes
	// it: a command line is visible to every user of the host (ps, /proc,
	// a pod spec), so a provider passes it in the environment (TokenEnv).
	Token string
	// InsecureControl allows an open control API (no Token) on a
	// non-loopback Listen.
	InsecureControl bool
	// Shutdown is the shutdown mode (Shutdown.Mode; "" = finish) and
	// ShutdownDelay a drain's delay (Shutdown.Delay).
	Shutdown      string
	ShutdownDelay time.Duration
}

// DefaultFlags are the command's defaults.
var DefaultFlags = Flags{Listen: "127.0.0.1:8080", Workers: 8, Service: "fixed:10ms", Seed: 1, HealthPath: "/"}

// SidecarFlagsOf returns the command line that serves a Sidecar for cfg on
// listen; cfg.Token is left out, as FlagsOf leaves it.
func SidecarFlagsOf(cfg SidecarConfig, listen string) (Flags, error) {
	f := DefaultFlags
	f.ID, f.Listen, f.Seed, f.Upstream, f.HealthPath = cfg.ID, listen, cfg.Seed, cfg.Upstream, cfg.HealthPath
	f.GRPCUpstream = cfg.GRPCUpstream
	f.Shutdown, f.ShutdownDelay = cfg.Shutdown.Mode, cfg.Shutdown.Delay
	if f.HealthPath == "" {
		f.HealthPath = DefaultFlags.HealthPath
	}
	return f.withFault(cfg.InitialFault)
}

// withFault returns f starting with fault (nil: none), in --fault's JSON.
func (f Flags) withFault(fault Fault) (Flags, error) {
	if fault != nil {
		b, err := MarshalFault(fault)
		if err != nil {
			return Flags{}, err
		}
		f.Fault = string(b)
	}
	return f, nil
}

// FlagsOf returns the command line that serves cfg on listen. It leaves
// cfg.Token out: the provider sets TokenEnv in the instance's environment.
func FlagsOf(cfg Config, listen string) (Flags, error) {
	svc, err := json.Marshal(cfg.Service)
	if err != nil {
		return Flags{}, fmt.Errorf("service distribution: %w", err)
	}
	f := Flags{ID: cfg.ID, Listen: listen, Workers: cfg.Workers, QueueLimit: cfg.QueueLimit, Service: string(svc),
		Seed: cfg.Seed, KeepAbandoned: cfg.KeepAbandoned, ResponseBytes: cfg.ResponseBytes, HealthPath: DefaultFlags.HealthPath,
		Shutdown: cfg.Shutdown.Mode, ShutdownDelay: cfg.Shutdown.Delay}
	return f.withFault(cfg.InitialFault)
}

// Bind defines the command's flags on fs, with f's values as defaults,
// writing into f.
func (f *Flags) Bind(fs *flag.FlagSet) {
	fs.IntVar(&f.ID, "id", f.ID, "instance id, sent in the "+InstanceHeader+" header of every response")
	fs.StringVar(&f.Listen, "listen", f.Listen, "address to listen on")
	fs.IntVar(&f.Workers, "workers", f.Workers, "requests served at once; 0 = unlimited")
	fs.IntVar(&f.QueueLimit, "queue-limit", f.QueueLimit, "requests allowed to wait in the FIFO queue; 0 = unbounded (a full queue answers 503)")
	fs.StringVar(&f.Service, "service", f.Service, "service time: fixed:D | uniform:MIN,MAX | exponential:MEAN | normal:MEAN,SD | lognormal:MEDIAN,SIGMA, or JSON as in experiment files")
	fs.Uint64Var(&f.Seed, "seed", f.Seed, "seed of the instance's random choices")
	fs.BoolVar(&f.KeepAbandoned, "keep-abandoned", f.KeepAbandoned, "serve queued requests whose client went away instead of dropping them")
	fs.Int64Var(&f.ResponseBytes, "response-bytes", f.ResponseBytes, "size of the body of every served answer, in bytes (\"ok\" padded); 0 = \"ok\\n\" alone")
	fs.StringVar(&f.Fault, "fault", f.Fault, `fault to start with, as the control API takes it, e.g. '{"mode":"fail","status":503}'`)
	fs.StringVar(&f.Upstream, "upstream", f.Upstream, "run as a fault sidecar in front of this service (http://host:port) instead of a fake server")
	fs.StringVar(&f.HealthPath, "health-path", f.HealthPath, "with --upstream: the upstream path /healthz is forwarded to")
	fs.StringVar(&f.GRPCUpstream, "grpc-upstream", f.GRPCUpstream, "with --upstream: forward gRPC calls to this h2c service (http://host:port) instead of --upstream")
	fs.StringVar(&f.Token, "token", f.Token, "bearer token every "+ControlPrefix+"* request must carry (Authorization: Bearer T); default: $"+TokenEnv+"; without one the control API is open, which only a loopback --listen allows")
	fs.BoolVar(&f.InsecureControl, "insecure-control", f.InsecureControl, "allow an open control API (no --token) on a non-loopback --listen: anyone who reaches the port can set faults")
	fs.StringVar(&f.Shutdown, "shutdown", f.Shutdown, "what SIGTERM or SIGINT does: finish (the default: stop accepting, let requests in flight finish for up to "+ShutdownGrace.String()+"), "+
		"abrupt (close every connection at once, no answers) or drain (go on serving with Connection: close for --shutdown-delay, then finish); /healthz answers 503 from the signal on")
	fs.DurationVar(&f.ShutdownDelay, "shutdown-delay", f.ShutdownDelay, "with --shutdown drain: how long to go on serving after the signal, at most "+MaxShutdownDelay.String())
}

// Args returns the arguments after `lbchaos serve` that Bind parses back
// into f.
func (f Flags) Args() []string {
	args := []string{
		"--id", strconv.Itoa(f.ID),
		"--listen", f.Listen,
		"--seed", strconv.FormatUint(f.Seed, 10),
	}
	if f.Upstream != "" {
		args = append(args, "--upstream", f.Upstream, "--health-path", f.HealthPath)
		if f.GRPCUpstream != "" {
			args = append(args, "--grpc-upstream", f.GRPCUpstream)
		}
	} else {
		args = append(args,
			"--workers", strconv.Itoa(f.Workers),
			"--queue-limit", strconv.Itoa(f.QueueLimit),
			"--service", f.Service)
		if f.KeepAbandoned {
			args = append(args, "--keep-abandoned")
		}
		if f.ResponseBytes != 0 {
			args = append(args, "--response-bytes", strconv.FormatInt(f.ResponseBytes, 10))
		}
	}
	if f.Fault != "" {
		args = append(args, "--fault", f.Fault)
	}
	if f.InsecureControl {
		args = append(args, "--insecure-control")
	}
	if f.Shutdown != "" {
		args = append(args, "--shutdown", f.Shutdown)
	}
	if f.ShutdownDelay != 0 {
		args = append(args, "--shutdown-delay", f.ShutdownDelay.String())
	}
	return args // never the token: see Flags.Token
}

// Config checks f and returns the fake server's configuration; each error
// names its flag. f must not set Upstream (see SidecarConfig).
func (f Flags) Config() (Config, error) {
	if f.Upstream != "" {
		return Config{}, errors.New("--upstream: runs a sidecar, which SidecarConfig configures")
	}
	if f.HealthPath != DefaultFlags.HealthPath {
		return Config{}, errors.New("--health-path: applies only with --upstream (the fake server answers /healthz itself)")
	}
	if f.GRPCUpstream != "" {
		return Config{}, errors.New("--grpc-upstream: applies only with --upstream (the fake server answers gRPC itself)")
	}
	dist, err := ParseDistFlag(f.Service)
	if err != nil {
		return Config{}, fmt.Errorf("--service: %w", err)
	}
	if err := f.checkControl(); err != nil {
		return Config{}, err
	}
	sd, err := f.shutdown()
	if err != nil {
		return Config{}, err
	}
	cfg := Config{ID: f.ID, Workers: f.Workers, QueueLimit: f.QueueLimit, Service: dist, Seed: f.Seed, KeepAbandoned: f.KeepAbandoned,
		ResponseBytes: f.ResponseBytes, Token: f.Token, Shutdown: sd}
	if f.Fault != "" {
		fault, err := ParseFault([]byte(f.Fault))
		if err != nil {
			return Config{}, fmt.Errorf("--fault: %w", err)
		}
		cfg.InitialFault = fault
	}
	return cfg, nil
}

// SidecarConfig checks f, which sets Upstream, and returns the sidecar's
// configuration; each error names its flag. The fake server's flags
// (workers, queue, service time) do not apply to a sidecar and must keep
// their defaults.
func (f Flags) SidecarConfig() (SidecarConfig, error) {
	if _, err := ParseUpstream(f.Upstream); err != nil {
		return SidecarConfig{}, fmt.Errorf("--upstream: %w", err)
	}
	why := "a sidecar forwards every request at once; the upstream has its own"
	switch d := DefaultFlags; {
	case f.Workers != d.Workers:
		return SidecarConfig{}, fmt.Errorf("--workers: does not apply with --upstream (%s workers)", why)
	case f.QueueLimit != d.QueueLimit:
		return SidecarConfig{}, fmt.Errorf("--queue-limit: does not apply with --upstream (%s queue)", why)
	case f.Service != d.Service:
		return SidecarConfig{}, errors.New("--service: does not apply with --upstream (the upstream's own time is the service time)")
	case f.KeepAbandoned != d.KeepAbandoned:
		return SidecarConfig{}, errors.New("--keep-abandoned: does not apply with --upstream (a client that goes away cancels its upstream request)")
	case f.ResponseBytes != d.ResponseBytes:
		return SidecarConfig{}, errors.New("--response-bytes: does not apply with --upstream (the upstream's answers are forwarded as they are)")
	}
	if _, err := parseHealthPath(f.HealthPath); err != nil {
		return SidecarConfig{}, fmt.Errorf("--health-path: %w", err)
	}
	if f.GRPCUpstream != "" {
		if _, err := ParseUpstream(f.GRPCUpstream); err != nil {
			return SidecarConfig{}, fmt.Errorf("--grpc-upstream: %w", err)
		}
	}
	if err := f.checkControl(); err != nil {
		return SidecarConfig{}, err
	}
	sd, err := f.shutdown()
	if err != nil {
		return SidecarConfig{}, err
	}
	cfg := SidecarConfig{ID: f.ID, Upstream: f.Upstream, GRPCUpstream: f.GRPCUpstream, HealthPath: f.HealthPath, Seed: f.Seed, Token: f.Token, Shutdown: sd}
	if f.Fault != "" {
		fault, err := ParseFault([]byte(f.Fault))
		if err == nil {
			err = checkFault(fault)
		}
		if err != nil {
			return SidecarConfig{}, fmt.Errorf("--fault: %w", err)
		}
		cfg.InitialFault = fault
	}
	if err := cfg.Validate(); err != nil {
		return SidecarConfig{}, err
	}
	return cfg, nil
}

// shutdown checks --shutdown and --shutdown-delay and returns them as a
// Shutdown.
func (f Flags) shutdown() (Shutdown, error) {
	sd := Shutdown{Mode: f.Shutdown, Delay: f.ShutdownDelay}
	if err := sd.checkMode(); err != nil {
		return Shutdown{}, fmt.Errorf("--shutdown: %w", err)
	}
	if err := sd.checkDelay(); err != nil {
		return Shutdown{}, fmt.Errorf("--shutdown-delay: %w", err)
	}
	return sd, nil
}

// checkControl checks --token and, without one, that --listen keeps the
// open control API on this machine (CheckControlListen).
func (f Flags) checkControl() error {
	if err := CheckToken(f.Token); err != nil {
		return fmt.Errorf("--token (or %s): %w", TokenEnv, err)
	}
	return CheckControlListen(f.Listen, f.Token, f.InsecureControl)
}

// ParseDistFlag reads a service-time distribution as --service takes it:
// the shorthand (fixed:10ms, uniform:5ms,15ms, exponential:10ms,
// normal:10ms,2ms, lognormal:10ms,0.5), or the JSON form experiment files
// use ({"dist":"fixed","value":"10ms"}).
func ParseDistFlag(s string) (Dist, error) {
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") {
		return parseDistJSON([]byte(t))
	}
	kind, rest, _ := strings.Cut(s, ":")
	params := strings.Split(rest, ",")
	want := map[string]int{"fixed": 1, "uniform": 2, "exponential": 1, "normal": 2, "lognormal": 2}
	n, ok := want[kind]
	if !ok {
		return Dist{}, fmt.Errorf("unknown distribution %q (fixed, uniform, exponential, normal, lognormal)", kind)
	}
	if rest == "" || len(params) != n {
		return Dist{}, fmt.Errorf("%s takes %d parameter(s), got %q", kind, n, rest)
	}
	dur := func(i int) (Duration, error) {
		d, err := time.ParseDuration(strings.TrimSpace(params[i]))
		if err != nil {
			return 0, fmt.Errorf("%s: want a duration like 10ms, got %q", kind, params[i])
		}
		return Duration(d), nil
	}
	var d Dist
	var err error
	d.Kind = kind
	switch kind {
	case "fixed":
		d.Value, err = dur(0)
	case "exponential":
		d.Mean, err = dur(0)
	case "uniform":
		if d.Min, err = dur(0); err == nil {
			d.Max, err = dur(1)
		}
	case "normal":
		if d.Mean, err = dur(0); err == nil {
			d.SD, err = dur(1)
		}
	case "lognormal":
		if d.Median, err = dur(0); err == nil {
			d.Sigma, err = strconv.ParseFloat(strings.TrimSpace(params[1]), 64)
			if err != nil {
				err = fmt.Errorf("lognormal: sigma: want a number, got %q", params[1])
			}
		}
	}
	if err != nil {
		return d, err
	}
	if err := d.Validate(); err != nil {
		b, _ := json.Marshal(d)
		return d, fmt.Errorf("%w (%s)", err, b)
	}
	return d, nil
}

// distJSONFields are the JSON names of Dist's fields.
var distJSONFields = jsonFields(reflect.TypeFor[Dist]())

// parseDistJSON reads the JSON form of a Dist: exactly one object, each
// field decoded on its own so that every error starts with the field's name.
func parseDistJSON(data []byte) (Dist, error) {
	var params map[string]json.RawMessage
	if err := json.Unmarshal(data, &params); err != nil {
		return Dist{}, fmt.Errorf("malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	var d Dist
	for _, key := range sortedKeys(params) {
		if !slices.Contains(distJSONFields, key) {
			return Dist{}, fmt.Errorf("%s: unknown field %q (a distribution takes %s)", fieldName(key), key, strings.Join(distJSONFields, ", "))
		}
		obj, err := json.Marshal(map[string]json.RawMessage{key: params[key]})
		if err != nil {
			return Dist{}, fmt.Errorf("%s: %v", key, err)
		}
		if err := json.Unmarshal(obj, &d); err != nil {
			return Dist{}, fmt.Errorf("%s: %s", key, decodeMessage(err))
		}
	}
	return d, d.Validate()
}
