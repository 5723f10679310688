// Package reports holds the Summary of one experiment run and renders it as
// summary.json, report.md, report.html, a terminal table and plots.
//
// The package knows nothing about how a Summary was measured: the harness (or
// a simulator) fills it in, and every renderer here reads only the model.
// Every metric a report, a comparison or an experiment file names is
// declared once, in the metric table (LookupMetric); report.md and
// report.html render one view model of the Summary (view.go).
package reports

import "time"

// Schema identifies the summary.json contract. Fields may be added to the
// model; existing field names and meanings never change.
const Schema = "lbchaos/summary/v1"

// Summary is the outcome of one experiment run across all its strategies.
// JSON field names are the summary.json contract, documented field by field
// in docs/summary.md (generated from these comments) and
// schemas/summary.schema.json.
type Summary struct {
	Schema          string    `json:"schema"`            // always "lbchaos/summary/v1"
	Experiment      string    `json:"experiment"`        // the experiment's name
	Engine          string    `json:"engine"`            // "real" or "sim"
	Backends        string    `json:"backends"`          // "process", "docker", "sim", ...
	Seed            uint64    `json:"seed"`              // the seed of every random choice; the same seed repeats a simulated run exactly
	Started         time.Time `json:"started"`           // when the run started (UTC); a simulated run's fixed epoch
	DurationS       float64   `json:"duration_s"`        // configured attack duration per strategy
	TargetRate      float64   `json:"target_rate"`       // requests per second the experiment asked for (with rate stages, their mean)
	SlowThresholdMs float64   `json:"slow_threshold_ms"` // a request slower than this counts as slow
	FaultyInstances []int     `json:"faulty_instances"`  // ids that had any fault during the run

	// HarnessSaturated lists the strategies whose load generator was the
	// bottleneck, and from which second: their numbers from then on
	// describe the harness, not the strategy. Absent when none was (and
	// for a simulated run). It comes before the strategies so that a
	// reader of summary.json meets it first.
	HarnessSaturated []HarnessSaturation `json:"harness_saturated,omitempty"`

	Strategies []Strategy `json:"strategies"` // one per strategy, in the experiment file's order

	// Fields beyond the v1 core.

	Description string        `json:"description,omitempty"`  // the experiment's description
	Arrival     string        `json:"arrival,omitempty"`      // "poisson" or "constant"
	RateProfile *RateProfile  `json:"rate_profile,omitempty"` // the rate stages when the rate ramps (rate: {start, stages}); absent for one rate
	TimeoutMs   float64       `json:"timeout_ms,omitempty"`   // the client's request timeout
	Instances   int           `json:"instances,omitempty"`    // instance count
	Workers     int           `json:"workers"`                // workers per instance (0 = unlimited)
	Service     string        `json:"service,omitempty"`      // service-time distribution, human readable
	Faults      []FaultWindow `json:"faults,omitempty"`       // the fault schedule (see FaultWindow)
	// Generators is how many load generators shared the load (generators:
	// N), each with its own client-side balancers; absent means one.
	Generators int `json:"generators,omitempty"`
	// Partial is true when the run was interrupted; the numbers cover only
	// what was measured before the interruption.
	Partial bool `json:"partial,omitempty"`
	// Abort, when set, is the abort condition that ended the run early:
	// what tripped, in which strategy and when (see Abort). That
	// strategy's numbers cover its attack until then; the strategies
	// after it were not run. Absent when no condition tripped.
	Abort *Abort `json:"abort,omitempty"`
	// Notes lists anything that weakens the measurement (generator behind,
	// interrupted run, connection cap reached, ...), in plain sentences.
	Notes []string `json:"notes,omitempty"`
	// Glossary says in a line what each base strategy, wrapper and proxy
	// the measured strategies name does ("p2c", "eject", "nginx"), in
	// the order the strategies first name them.
	Glossary []Term `json:"glossary,omitempty"`
	// KeyMetric names the Strategy metric the experiment exists to show
	// ("bad_ratio" when the file names none: the share of requests that
	// failed or were slow); the report's verdict ranks strategies by it.
	KeyMetric string `json:"key_metric,omitempty"`
	// Expectations are the experiment file's expectations, checked
	// against this run.
	Expectations []ExpectationResult `json:"expectations,omitempty"`
	// ExpectationsAdvisory is true when the run overrode the experiment
	// file's duration or rate: the expectations were checked but did not
	// decide the run's outcome.
	ExpectationsAdvisory bool `json:"expectations_advisory,omitempty"`
	// ExperimentFile is the experiment file's content as run.
	ExperimentFile string `json:"experiment_file,omitempty"`
	// CalibratedFrom, in a simulation calibrated with a real run's
	// transport overhead (lbchaos run --engine sim --calibrate), names
	// the calibration and keeps that run's figures, which the report shows
	// beside the simulation's ("sim vs real"); absent otherwise.
	CalibratedFrom *Calibration `json:"calibrated_from,omitempty"`
	// Environment of the run, for reproducing it.
	GoVersion string `json:"go_version,omitempty"`      // the Go version lbchaos was built with (real engine)
	CPUs      int    `json:"cpus,omitempty"`            // CPUs the run's process could use (real engine)
	Version   string `json:"lbchaos_version,omitempty"` // the lbchaos version that ran
}

// Strategy is the measured outcome of one strategy.
type Strategy struct {
	Name            string  `json:"name"`             // as written in the experiment file
	Requests        int64   `json:"requests"`         // requests sent
	AchievedRate    float64 `json:"achieved_rate"`    // requests sent per second
	GeneratorBehind bool    `json:"generator_behind"` // true when achieved_rate < 99% of target_rate
	SuccessRatio    float64 `json:"success_ratio"`    // 2xx responses / requests
	ErrorRatio      float64 `json:"error_ratio"`      // 1 - success_ratio (non-2xx, timeouts, resets, refused)
	TimeoutRatio    float64 `json:"timeout_ratio"`    // requests that hit the client timeout / requests
	SlowRatio       float64 `json:"slow_ratio"`       // requests slower than slow_threshold_ms (timeouts included) / requests
	FaultyShare     float64 `json:"faulty_share"`     // requests sent to faulty_instances / requests
	Ejections       int     `json:"ejections"`        // times any instance was ejected (0 when not applicable)
	// EjectionsObserved is false when the strategy's ejections could not
	// be observed (a real proxy, grpc-go's balancer: Ejections is then 0
	// whatever they did); true when counted; absent in older summaries,
	// which counted only built-in strategies' ejections.
	EjectionsObserved *bool      `json:"ejections_observed,omitempty"`
	LatencyMs         Latency    `json:"latency_ms"` // every request's latency, failed ones included
	Instances         []Instance `json:"instances"`  // one per instance, by id

	// Fields beyond the v1 core.

	ElapsedS float64 `json:"elapsed_s"` // wall time the attack actually ran
	// SendLagMs describes how late requests left relative to the arrival
	// schedule (0 when the generator kept up).
	SendLagMs    LagStats  `json:"send_lag_ms"`
	Unattributed int64     `json:"unattributed,omitempty"` // requests that never reached a backend pick
	Partial      bool      `json:"partial,omitempty"`      // the run was interrupted during this strategy's attack: its numbers cover what was measured before
	Events       []Event   `json:"events,omitempty"`       // ejections, re-admissions, crashes (see Event)
	Timeline     *Timeline `json:"timeline,omitempty"`     // per-instance counts and latency, one bucket a second (see Timeline)
	// Percentiles is the latency-by-percentile curve of every request,
	// at percentiles from 50 to 99.99 and the maximum (100).
	Percentiles []PercentilePoint `json:"percentiles,omitempty"`
	// PercentilesOK and PercentilesFailed are the same curve of the
	// successful (2xx) and of the failed requests alone; absent when there
	// were none.
	PercentilesOK     []PercentilePoint `json:"percentiles_ok,omitempty"`
	PercentilesFailed []PercentilePoint `json:"percentiles_failed,omitempty"`
	// LatencyOkMs and LatencyFailedMs split LatencyMs by outcome: the
	// successful (2xx) requests and the failed ones (a timeout counts as
	// its timeout); absent when there were none. A fault that fails fast
	// pulls LatencyMs down; LatencyOkMs is what a served user waited.
	LatencyOkMs     *Latency `json:"latency_ok_ms,omitempty"`
	LatencyFailedMs *Latency `json:"latency_failed_ms,omitempty"`
	// Harness is the load generator's own health during the attack (real
	// engine, one generator); absent for a simulated run.
	Harness *Harness `json:"harness,omitempty"`
	// TransportOverheadMs is the distribution of each answered request's
	// latency minus the instance's own time for it (from the handler's
	// start to its answer, which the instance reports): the share of the
	// connection, the HTTP stacks and scheduling, which a simulator adds to
	// queueing and service. Real engine, one generator, HTTP to lbchaos's
	// own instances; absent otherwise (simulated run, gRPC, a proxy under
	// test, an application image, several generators).
	TransportOverheadMs *Overhead `json:"transport_overhead_ms,omitempty"`

	// Scenario metrics (see Derive).

	// MaxAvgLoad is the busiest instance's requests over the mean per
	// instance: 1 is perfectly even.
	MaxAvgLoad float64 `json:"max_avg_load"`
	// Affinity is the share of keyed requests that went to their key's
	// home, the instance that served the key most often; absent when
	// requests carried no key.
	Affinity *float64 `json:"affinity,omitempty"`
	// MaxJumpRps is the largest change of any instance's request rate from
	// one second to the next, in requests per second.
	MaxJumpRps float64 `json:"max_jump_rps"`
	// ShareStddev is the mean over instances of the standard deviation of
	// each instance's per-second share of requests: how much the traffic
	// split moves around.
	ShareStddev float64 `json:"share_stddev"`
	// ErrorTailS is how long errors went on after the last fault ended:
	// from its end to the end of the last second (by send time) whose error
	// ratio exceeded 1%; 0 when errors stopped with the fault. Absent when
	// no fault ends before the run does.
	ErrorTailS *float64 `json:"error_tail_s,omitempty"`

	// AttemptsPerRequest describes how many attempts each client request
	// made (1 without retries or hedging; 0 for one that reached no
	// instance). Absent in older summaries. Through a proxy it is what
	// lbchaos's instances executed per request (the proxy's retries
	// included; an attempt no instance read, not), when they count it
	// (see duplicate_executions).
	AttemptsPerRequest *AttemptStats `json:"attempts_per_request,omitempty"`
	// Retry counts what the strategy's retry and hedge policy decided;
	// absent without one.
	Retry *RetryStats `json:"retry,omitempty"`
	// DuplicateExecutions counts the requests the instances executed more
	// than once: request ids (the load generator's X-Vegeta-Seq, which a
	// retry carries too) that the instances, the same one or several,
	// read more than once. A retry of a request the failing instance had
	// read (it then hung, reset or answered an error) counts; a retry of
	// one that never reached an instance does not. Counted by lbchaos's
	// own instances (or sidecars, as they admit a request) and read from
	// them after the attack; absent when not measured: a simulation,
	// instances without lbchaos's control API, gRPC, several generators.
	DuplicateExecutions *int64 `json:"duplicate_executions,omitempty"`
	// Tiers, in an experiment whose instances are layered (its tiers:),
	// is each tier's traffic, the tier the client calls first. The
	// strategy's requests, shares, faulty_share and timeline are then
	// the client's, to the first tier; instances of a lower tier count
	// the calls they received from the tier above (retries included),
	// and their share is of their tier's requests. Absent without tiers.
	Tiers []Tier `json:"tiers,omitempty"`
	// Zones, in an experiment whose instances and clients are in zones
	// (its zones:), is each zone's traffic, in the file's order: what its
	// clients sent and where it went, and what its instances received.
	// Absent without zones.
	Zones []ZoneStats `json:"zones,omitempty"`
	// CrossZoneShare is, of the requests that reached an instance, the
	// share whose instance (the last attempt's, under a retry or hedge
	// policy) was in another zone than their client: each paid
	// cross_zone_latency. Absent without zones.
	CrossZoneShare *float64 `json:"cross_zone_share,omitempty"`
	// Rotation, for instances behind a Kubernetes Service that a fault
	// hit, is how long they took to leave the Service's rotation (see
	// OutOfRotation); absent otherwise.
	Rotation []OutOfRotation `json:"rotation,omitempty"`
}

// Tier is one layer of a tiered fleet, as a strategy loaded it.
type Tier struct {
	Name      string `json:"name"`      // the tier's name in the experiment file
	Instances []int  `json:"instances"` // its instances' ids
	// RequestsReceived counts the requests its instances received: the
	// client's attempts for the first tier, the calls of the tier above
	// for the others, every retry and hedge included.
	RequestsReceived int64 `json:"requests_received"`
	// PerClientRequest is RequestsReceived over the strategy's requests:
	// the amplification a client request undergoes down to this tier
	// (27 at the third tier when every tier makes 3 attempts).
	PerClientRequest float64 `json:"per_client_request"`
	Errors           int64   `json:"errors"`      // requests it received that did not end in a 2xx answer
	ErrorRatio       float64 `json:"error_ratio"` // errors / requests_received
	// Retry counts what the retry and hedge policies of its instances'
	// calls to the next tier decided, summed over its instances; absent
	// for the last tier and for calls without a policy.
	Retry *RetryStats `json:"retry,omitempty"`
}

// ZoneStats is one zone's traffic: its clients' requests and its
// instances' share.
type ZoneStats struct {
	Name      string `json:"name"`      // the zone's name in the experiment file
	Instances []int  `json:"instances"` // its instances' ids (none for a zone of clients only)
	// ClientsShare is the zone's share of the clients, as the experiment
	// gives it: the share of the requests its clients send.
	ClientsShare float64 `json:"clients_share"`
	Requests     int64   `json:"requests"`    // requests its clients sent
	ErrorRatio   float64 `json:"error_ratio"` // of its clients' requests, those without a 2xx answer
	// LatencyMs is the latency of its clients' requests; absent when
	// they sent none.
	LatencyMs *Latency `json:"latency_ms,omitempty"`
	// LocalShare is, of its clients' requests that reached an instance,
	// the share whose instance (the last attempt's) was in its own zone.
	LocalShare float64 `json:"local_share"`
	// Received counts the requests its instances received, from every
	// zone (attempts, under a retry or hedge policy).
	Received int64 `json:"received"`
	// ReceivedShare is Received over all the strategy's requests
	// (attempts), as an instance's share is.
	ReceivedShare float64 `json:"received_share"`
}

// AttemptStats is the distribution of attempts per client request.
type AttemptStats struct {
	Mean float64 `json:"mean"` // attempts per request, on average
	P99  int     `json:"p99"`  // the 99th percentile of attempts per request
	Max  int     `json:"max"`  // the most attempts one request made
}

// RetryStats counts a retry or hedge policy's decisions.
type RetryStats struct {
	Retries        int64 `json:"retries"`         // retries sent
	RetriesRefused int64 `json:"retries_refused"` // retries a budget refused
	Hedges         int64 `json:"hedges"`          // hedged attempts sent
	HedgesWon      int64 `json:"hedges_won"`      // requests answered by a hedged attempt
}

// PercentilePoint is one point of a latency-by-percentile curve.
// Term is one line of Summary.Glossary.
type Term struct {
	Name string `json:"name"` // e.g. "least-inflight", "eject", "nginx"
	Text string `json:"text"` // what it does, in a line
}

// EjectionsSeen reports whether st's Ejections counts its ejections (see
// EjectionsObserved).
func (st *Strategy) EjectionsSeen() bool {
	return st.EjectionsObserved == nil || *st.EjectionsObserved
}

type PercentilePoint struct {
	Percentile float64 `json:"p"`  // e.g. 99.9
	LatencyMs  float64 `json:"ms"` // latency at that percentile
}

// ExpectationResult is one expectation of the experiment file, checked: for
// Strategy, Metric Op Want (e.g. error_ratio < 0.005), and what the run got.
type ExpectationResult struct {
	Strategy string  `json:"strategy"` // the strategy's name
	Metric   string  `json:"metric"`   // a Strategy field, e.g. error_ratio
	Op       string  `json:"op"`       // "<", "<=", ">", ">="
	Want     float64 `json:"want"`     // the value the file gives
	Got      float64 `json:"got"`      // the run's value
	Passed   bool    `json:"passed"`   // Got Op Want holds
	// Missing is true when the run has no such strategy (interrupted, or
	// left out with --strategies), or could not measure the metric (a
	// metric only the real engine's instances count, such as
	// duplicate_executions, in a simulation); the expectation then neither
	// passes nor fails the run.
	Missing bool `json:"missing,omitempty"`
}

// Instance is one backend's share of a strategy's traffic. Requests counts
// every request sent to it, including those that got no response.
type Instance struct {
	ID         int     `json:"id"`          // the instance id, from 0
	Faulty     bool    `json:"faulty"`      // true when the instance had any fault during the run
	Requests   int64   `json:"requests"`    // requests sent to the instance, including those that got no response
	Share      float64 `json:"share"`       // requests / the strategy's requests
	Errors     int64   `json:"errors"`      // requests to it that did not get a 2xx response
	ErrorRatio float64 `json:"error_ratio"` // errors / requests
	LatencyMs  Latency `json:"latency_ms"`  // latency of the requests sent to it

	// Attempts, when the proxy's log lists every upstream a request tried
	// (nginx's $upstream_addr), is how many times a request was sent to
	// this instance, each retry (proxy_next_upstream) counted where it
	// went; Requests counts only the attempt that gave the answer (or, for
	// a request without one, the last tried). Nil when not observed.
	//
	// Under the engine's own strategies it is filled for every instance:
	// every attempt sent to it, retries and hedges included, the same
	// count as Requests.
	//
	// For a proxy whose log does not list every upstream tried (HAProxy,
	// Caddy, lbchaos proxy, the connection-level ones) it is what the
	// instance itself counted: the requests it executed (see
	// duplicate_executions), retries included; nil when the instances do
	// not count.
	Attempts *int64 `json:"attempts,omitempty"`
	// Cancelled counts the attempts to it that the client gave up because
	// the request no longer needed them (a hedged request answered by
	// another attempt): in Requests, not in Errors or the latencies.
	Cancelled int64 `json:"cancelled,omitempty"`

	Timeouts int64 `json:"timeouts"` // requests to it that hit the client timeout
	Slow     int64 `json:"slow"`     // requests to it slower than slow_threshold_ms (timeouts included)

	// LatencyOkMs and LatencyFailedMs split LatencyMs by outcome, as the
	// Strategy's fields of the same names do.
	LatencyOkMs     *Latency `json:"latency_ok_ms,omitempty"`
	LatencyFailedMs *Latency `json:"latency_failed_ms,omitempty"`

	// Utilization is the share of the instance's worker time spent
	// serving: busy worker-seconds over workers × the time from the start
	// of the attack until its last request ended (so a queue still
	// draining after the attack counts). Absent for instances without a
	// worker limit or when it was not measured.
	Utilization *float64 `json:"utilization,omitempty"`
	// ShareStddev is the standard deviation of the instance's per-second
	// share of all requests.
	ShareStddev float64 `json:"share_stddev"`
}

// Latency is a latency distribution in milliseconds. As latency_ms it
// covers every request, failed ones included; a timeout counts as its
// timeout. latency_ok_ms and latency_failed_ms cover one outcome each.
type Latency struct {
	Mean float64 `json:"mean"` // arithmetic mean
	P50  float64 `json:"p50"`  // median
	P90  float64 `json:"p90"`  // 90th percentile
	P99  float64 `json:"p99"`  // 99th percentile
	P999 float64 `json:"p999"` // 99.9th percentile
	Max  float64 `json:"max"`  // the slowest request
}

// Overhead is a distribution in milliseconds, by percentiles from p1 to
// p99.9, of Count requests.
type Overhead struct {
	Count int64   `json:"count"` // requests measured
	Mean  float64 `json:"mean"`  // arithmetic mean
	P1    float64 `json:"p1"`    // 1st percentile
	P10   float64 `json:"p10"`   // 10th percentile
	P50   float64 `json:"p50"`   // median
	P90   float64 `json:"p90"`   // 90th percentile
	P99   float64 `json:"p99"`   // 99th percentile
	P999  float64 `json:"p999"`  // 99.9th percentile
	Max   float64 `json:"max"`   // the largest
	// Quantiles is the distribution at every percent, from p0 (the
	// minimum) to p100 (the maximum): 101 values, what a calibrated
	// simulation samples from (lbchaos run --engine sim --calibrate);
	// absent in runs of versions that did not record it, which calibrate
	// from the percentiles above.
	Quantiles []float64 `json:"quantiles,omitempty"`
}

// LagStats summarises how far behind schedule requests were sent.
type LagStats struct {
	P50 float64 `json:"p50"` // milliseconds
	P99 float64 `json:"p99"` // milliseconds
	Max float64 `json:"max"` // milliseconds
}

// FaultWindow is one scheduled fault: instance, mode, and when it was active,
// in seconds from the start of each strategy's attack. EndS is the attack
// duration when the fault was never cleared.
type FaultWindow struct {
	Instance int     `json:"instance"`         // the instance id
	Mode     string  `json:"mode"`             // the fault's mode, as the experiment file names it
	Detail   string  `json:"detail,omitempty"` // e.g. "status=503 delay=1ms"
	StartS   float64 `json:"start_s"`          // seconds from the attack's start
	EndS     float64 `json:"end_s"`            // seconds from the attack's start
}

// Event is a change in a strategy's view of an instance, at TimeS seconds
// from the start of the attack.
type Event struct {
	TimeS    float64 `json:"t_s"`      // seconds from the start of the attack
	Instance int     `json:"instance"` // the instance id; -1 for a proxy-exit (the proxy in front of every instance) or a rollout (the whole fleet)
	// Kind is "eject" or "readmit"; "health" (a new health level, named by
	// Detail); "probe" (an active health check's verdict, Detail "down" or
	// "up"); "join" or "leave" (the instance entered or left the host set);
	// "subchannel-connecting", "subchannel-ready",
	// "subchannel-transient-failure" (Detail: the connection error),
	// "subchannel-idle" or "subchannel-shutdown" (a grpc-go policy's
	// subchannel to the instance changed state).
	//
	// Events of the backends themselves, not of the strategy's view:
	// "crash" (the instance died on its own, not by a scheduled fault: its
	// container exited, or a goroutine of its in-process server panicked
	// and the instance stopped serving; Detail: the exit code or the panic
	// value), "panic" (code of an in-process instance panicked and the
	// instance went on serving: a handler, whose request was aborted or
	// whose gRPC call failed with INTERNAL, or the sleeper every
	// in-process server shares; Detail: where, the panic value, what it
	// cost and how many more followed within the second), and
	// "proxy-exit" (the proxy process under test exited before the
	// harness stopped it; Instance is -1, Detail its exit status). Behind
	// a Kubernetes Service: "not-ready" and "ready" (the pod's readiness
	// changed), "endpoint-out" and "endpoint-in" (it left or rejoined the
	// Service's ready endpoints), and for a Deployment "rollout-start" and
	// "rollout-done" (its rolling restart began, or every replica was
	// updated and available; Instance is -1). Log
	// holds the last lines of the instance's or proxy's output, or of the
	// panic's stack.
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"` // what the kind needs said beside it (see kind); absent when nothing
	// Log is the end of the output of what crashed or exited (crash,
	// panic, proxy-exit), oldest line first; absent for other kinds.
	Log []string `json:"log,omitempty"`
}

// Kinds of the events of backends and proxies (see Event.Kind).
const (
	EventCrash     = "crash"
	EventPanic     = "panic"
	EventProxyExit = "proxy-exit"
)

// ProxyInstance is the Instance of a proxy-exit event: the proxy in front
// of every instance, not one of them.
const ProxyInstance = -1

// Timeline holds per-instance series in fixed buckets of BucketS seconds,
// by the time each request was sent. Index k covers [k*BucketS, (k+1)*BucketS).
type Timeline struct {
	BucketS   float64          `json:"bucket_s"`  // a bucket's width in seconds
	Instances []InstanceSeries `json:"instances"` // one series per instance, in id order
	// Offered counts per bucket the client's requests (by send time);
	// Attempts the attempts those requests sent to instances (retries and
	// hedges included: the amplification); Goodput those requests answered
	// 2xx within their deadline. Absent from older summaries.
	Offered  []int64 `json:"offered,omitempty"`
	Attempts []int64 `json:"attempts,omitempty"`
	Goodput  []int64 `json:"goodput,omitempty"`
	// Unrouted counts per bucket the requests that reached no instance
	// (the strategy allowed none); each one failed. Absent when there were
	// none.
	Unrouted []int64 `json:"unrouted,omitempty"`
}

// InstanceSeries is one instance's per-bucket series. All slices have the
// same length. Latency entries are 0 for buckets without requests.
type InstanceSeries struct {
	ID       int       `json:"id"`       // the instance id
	Requests []int64   `json:"requests"` // requests sent to it in each bucket
	Errors   []int64   `json:"errors"`   // those of them that did not get a 2xx answer
	P50Ms    []float64 `json:"p50_ms"`   // the median latency of its requests in each bucket
	P99Ms    []float64 `json:"p99_ms"`   // the 99th percentile latency of its requests in each bucket
	// P50OkMs and P99OkMs are the same percentiles of the successful
	// requests alone (0 for buckets without one); absent when not measured
	// (a distributed run's generators stream only every request's).
	P50OkMs []float64 `json:"p50_ok_ms,omitempty"`
	P99OkMs []float64 `json:"p99_ok_ms,omitempty"`
}
