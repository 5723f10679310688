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
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/reports"
)

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

// Protocols the load speaks to the balancer or the instances.
const (
	// ProtocolHTTP1 is HTTP/1.1 with keep-alive connection pools (default).
	ProtocolHTTP1 = "http1"
	// ProtocolH2C is HTTP/2 over cleartext (prior knowledge): each
	// balancer replica holds Connections connections and multiplexes its
	// requests onto them.
	ProtocolH2C = "h2c"
	// ProtocolGRPC is a unary gRPC call (faultyserver.GRPCMethod) over
	// HTTP/2, Connections connections per replica.
	ProtocolGRPC    = "grpc"
	DefaultProtocol = ProtocolHTTP1
)

// Protocols are the values of protocol.
var Protocols = []string{ProtocolHTTP1, ProtocolH2C, ProtocolGRPC}

// DefaultConnections is connections when the file names none and the
// protocol multiplexes (h2c, grpc).
const DefaultConnections = 1

// Experiment is a validated experiment with every default filled in.
type Experiment struct {
	Name          string
	Description   string
	Source        string // where it was loaded from, for messages
	Seed          uint64
	Duration      time.Duration
	Arrival       string
	Rate          float64      // requests per second; with Profile, its mean over Duration
	Profile       *RateProfile // rate: {stages: ...}, the rate changing over the run; nil: Rate throughout
	Timeout       time.Duration
	SlowThreshold time.Duration
	Instances     Instances
	// Tiers, when set, layer the instances (tiers.go): the client calls
	// the first tier, whose instances call the next, and so on.
	Tiers []Tier
	// Zones, when set, place the instances and the clients in zones
	// (zones.go); CrossZoneLatency is what a request from a client to an
	// instance of another zone waits on top, as a longer network path.
	Zones            []Zone
	CrossZoneLatency time.Duration
	Faults           []Fault
	Strategies       []string // strategy specs as written, e.g. "least-inflight+eject(consecutive=5,duration=5s)"
	// ProxyFiles holds, for each strategy that names a file of its own
	// (nginx:file(path=...), haproxy:file(path=...)), the file's absolute
	// path: a relative path is resolved against the experiment file's
	// directory, or, for a strategy given by Apply that the file does not
	// list, against the current directory. A shipped experiment has no
	// directory: its file strategies need absolute paths.
	ProxyFiles map[string]string
	// Keys, when set, makes the load generator give every request an
	// affinity key drawn from this distribution (see KeySpec).
	Keys *KeySpec
	// Requests, when set, are the requests the load generator sends
	// (without them every request is GET /). Keys and Requests.Key are
	// not both set.
	Requests *Requests
	// Replicas splits the load evenly across this many independent
	// balancers of each strategy, each seeing only its own in-flight
	// counts (1 = one balancer).
	Replicas int
	// Generators spreads the load over this many load generators, each a
	// process of its own (the simulator splits it the same way): request
	// k goes to generator k mod Generators, all on one schedule from a
	// shared start, and each runs Replicas balancers of each strategy. So
	// Generators × Replicas independent client-side balancers in all
	// (1 = one process).
	Generators int
	// Protocol is what the load speaks: ProtocolHTTP1 (default),
	// ProtocolH2C or ProtocolGRPC.
	Protocol string
	// Connections is how many client connections each balancer replica
	// holds when the protocol multiplexes requests (h2c, grpc), and how
	// many connections a connection-level strategy (a +pinned wrapper, an
	// L4 proxy) balances; 0 for http1 without those, whose keep-alive
	// pools grow as needed.
	Connections int
	// NoKeepAlive (the file's keepalive: false) sends every HTTP/1.1
	// request over a connection of its own, closed after the answer: a
	// connection-level balancer (kube:service) then chooses per request.
	NoKeepAlive bool
	// KeyMetric is the metric the experiment exists to show, one of
	// KeyMetrics(); DefaultKeyMetric when the file names none.
	KeyMetric string
	// Expect are the file's expectations, in file order. Each names one
	// of the file's strategies; after Apply with other strategies some
	// may name a strategy that is not run.
	Expect []Expectation
	// Abort are the file's abort conditions (abort.go), in file order:
	// the first to trip ends the run.
	Abort []Abort
	Raw   []byte // the file's content
	// Warnings are what the loader and Apply changed or left out that the
	// user did not ask for in so many words (a name taken from the file's
	// name, a fault past a shortened run's end); the command line prints
	// them before the run.
	Warnings []string
}

// Instances describes the fleet. Workers and Service are the defaults;
// Each holds every instance's own settings (len Count), which differ from
// them for instances of a group.
type Instances struct {
	Count         int
	Workers       int // 0 = unlimited
	QueueLimit    int // 0 = unbounded
	KeepAbandoned bool
	// ResponseBytes is the size of every served answer's body (the fake
	// server's Config.ResponseBytes); 0 = "ok\n".
	ResponseBytes int64
	Service       faultyserver.Dist
	Each          []Instance
	// External, when set, lists instances someone else started (len
	// Count): a run sends load to them instead of starting fake servers.
	// Workers, QueueLimit, KeepAbandoned and Service then describe only
	// the simulator's model of them; Service is zero when none is given.
	External []External
	// HealthPath is the path whose GET tells that an external instance
	// without a sidecar answers (default DefaultHealthPath).
	HealthPath string
	// App, when set, makes every instance a container of the user's own
	// image with an lbchaos sidecar in front of it. Workers, QueueLimit
	// and KeepAbandoned keep their defaults (the service has its own) and
	// Service, if given, is only the simulator's model of it.
	App *App
	// Readiness is the readiness probe of the instances' pods; nil: no
	// readiness probe.
	Readiness *Readiness
	// Shutdown is what an instance does when it is told to stop.
	Shutdown Shutdown
	// Kube is how the Kubernetes backends run the instances.
	Kube Kube
}

// Readiness is a readiness probe, as the kubelet runs it: a GET of Path
// every Period, Timeout each; FailureThreshold failures in a row take the
// pod out of its Service's endpoints, SuccessThreshold successes put it
// back.
type Readiness struct {
	Path             string        // default: instances.health when set, else faultyserver.HealthPath
	Period, Timeout  time.Duration // defaults 10s and 1s (Kubernetes' own)
	FailureThreshold int           // default 3
	SuccessThreshold int           // default 1
}

// Equal reports whether r and o describe the same probe (both nil
// included).
func (r *Readiness) Equal(o *Readiness) bool {
	if r == nil || o == nil {
		return r == o
	}
	return *r == *o
}

// Shutdown is how an instance stops: the server's own shutdown (Mode and
// Delay, see faultyserver.Shutdown), and on Kubernetes the pod's preStop
// sleep, before the server is signalled, and its grace period, after
// which the kubelet kills it.
type Shutdown struct {
	faultyserver.Shutdown               // Mode (default "finish"), Delay
	PreStopSleep          time.Duration // 0: none (a pod's preStop sleep)
	TerminationGrace      time.Duration // default 30s (a pod's terminationGracePeriodSeconds)
}

// Kube is how the Kubernetes backends run the instances.
type Kube struct {
	Workload string   // WorkloadPods (default) or WorkloadDeployment
	Service  bool     // a Kubernetes Service selects the instances
	Rollout  *Rollout // nil: none
}

// Equal reports whether k and o describe the same workload.
func (k Kube) Equal(o Kube) bool {
	if k.Rollout == nil || o.Rollout == nil {
		return k.Workload == o.Workload && k.Service == o.Service && k.Rollout == o.Rollout
	}
	return k.Workload == o.Workload && k.Service == o.Service && *k.Rollout == *o.Rollout
}

// Rollout is a rolling restart of the instances' Deployment.
type Rollout struct {
	At             time.Duration // when the rolling restart starts, from the run's start
	MaxSurge       string        // as Kubernetes takes it: "1" or "25%"; default "25%"
	MaxUnavailable string        // default "25%"
}

// Workloads: what the Kubernetes backends create for the instances.
const (
	WorkloadPods       = "pods"       // one pod per instance
	WorkloadDeployment = "deployment" // a Deployment of Count replicas
)

// Defaults of instances.readiness, instances.shutdown and instances.kube
// (Kubernetes' own where it has one).
const (
	DefaultReadinessPeriod  = 10 * time.Second
	DefaultReadinessTimeout = time.Second
	DefaultFailureThreshold = 3
	DefaultSuccessThreshold = 1
	DefaultTerminationGrace = 30 * time.Second
	DefaultMaxSurge         = "25%"
	DefaultMaxUnavailable   = "25%"
	DefaultWorkload         = WorkloadPods
	DefaultShutdownMode     = faultyserver.ShutdownFinish
)

// App is the user's own service, run from a local image as every
// instance, each behind an lbchaos sidecar (lbchaos serve --upstream).
type App struct {
	// Image is the image reference; it must exist on the engine (lbchaos
	// never pulls).
	Image string
	// Port is the service's HTTP port.
	Port int
	// PortEnv, when set, is the environment variable through which the
	// service takes its port: lbchaos then assigns each instance its own.
	PortEnv string
	// Health is the path answered 2xx when the service is ready (default
	// DefaultHealthPath).
	Health string
	// Env and Args are the container's environment and arguments.
	Env  map[string]string
	Args []string
	// Restart restarts the service's containers before each strategy;
	// false keeps them running from one strategy to the next.
	Restart bool
}

// Equal reports whether a and b describe the same app (both nil included).
func (a *App) Equal(b *App) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Image == b.Image && a.Port == b.Port && a.PortEnv == b.PortEnv && a.Health == b.Health &&
		maps.Equal(a.Env, b.Env) && slices.Equal(a.Args, b.Args) && a.Restart == b.Restart
}

// Foreign reports whether the instances are a service lbchaos does not
// implement (external instances, or the user's own image): their workers,
// queue and service time are then only the simulator's model of them.
func (in Instances) Foreign() bool {
	return len(in.External) > 0 || in.App != nil
}

// DefaultHealthPath is the health path of external instances.
const DefaultHealthPath = "/"

// External is one instance that already runs.
type External struct {
	// URL is the instance's base URL, e.g. http://10.0.0.5:8080.
	URL string
	// Sidecar, when set, is the base URL of an lbchaos sidecar in front of
	// the instance: it serves the control API (so faults apply) and is the
	// address load goes to.
	Sidecar string
}

// Modeled reports whether every instance has a service time: the model
// the simulator runs and lbchaos's own instances serve with. Only foreign
// instances (Foreign) run without one; a file that gives just a count
// runs only once they are external (Overrides.External).
func (in Instances) Modeled() bool {
	for id := range in.Count {
		if in.Instance(id).Service == (faultyserver.Dist{}) {
			return false
		}
	}
	return true
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
	// From, when set, limits a network fault to the traffic of the
	// clients of these zones (a partition: partition: [a, b]); nil: all
	// traffic.
	From []string
	// Origin is where the file gives this fault's instance, for messages:
	// "faults[0].instance" or "faults[0].instances[1]"; "" for a fault
	// made by the loader (a warm-up) or by code.
	Origin string
}

// where is the fault's instance field, and the fault's entry, as the file
// names them; faults[i] when the file does not.
func (f Fault) where(i int) (instance, entry string) {
	if f.Origin == "" {
		entry = fmt.Sprintf("faults[%d]", i)
		return entry + ".instance", entry
	}
	entry, _, _ = strings.Cut(f.Origin, ".")
	return f.Origin, entry
}

// PeakRate returns the highest request rate of the run.
func (e *Experiment) PeakRate() float64 {
	if e.Profile == nil {
		return e.Rate
	}
	return e.Profile.Peak(e.Duration)
}

// FaultyInstances returns the sorted ids of instances that have any fault
// but a partition's.
func (e *Experiment) FaultyInstances() []int {
	ids := []int{}
	for _, f := range e.Faults {
		if len(f.From) > 0 {
			continue // a partition: the instance is fine for its own zone's clients
		}
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
