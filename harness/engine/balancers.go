package engine

import (
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies"
)

// StrategySeed gives each strategy its own random stream, stable under
// reordering of the experiment's strategy list.
func StrategySeed(seed uint64, name string) *rand.Rand {
	h := fnv.New64a()
	_, _ = io.WriteString(h, name)
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// MaxEvents bounds the events one strategy records.
const MaxEvents = 100000

// EventLog records a strategy's ejections, re-admissions, health changes
// and joins, with their time from the start of the attack and the replica
// (balancer) that made them. Safe for concurrent use.
type EventLog struct {
	mu     sync.Mutex
	start  time.Time
	events []loggedEvent
	drops  int
}

// loggedEvent is an event with the replica that recorded it and its place
// in that replica's order: together with the time, a total order that
// does not depend on how the replicas were spread over event logs (one
// process, or one log per generator, merged).
type loggedEvent struct {
	reports.Event
	replica int
	seq     int
}

// NewEventLog returns a log whose times count from start.
func NewEventLog(start time.Time) *EventLog { return &EventLog{start: start} }

// Add records e of replica 0, or counts it as dropped beyond MaxEvents.
func (l *EventLog) Add(e strategies.Event) { l.AddFrom(0, e) }

// AddFrom records e of the given replica, or counts it as dropped beyond
// MaxEvents.
func (l *EventLog) AddFrom(replica int, e strategies.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.events) >= MaxEvents {
		l.drops++
		return
	}
	l.events = append(l.events, loggedEvent{
		Event:   reports.Event{TimeS: e.Time.Sub(l.start).Seconds(), Instance: e.Endpoint, Kind: e.Kind, Detail: e.Detail},
		replica: replica,
		seq:     len(l.events),
	})
}

// SetStart moves the origin of the times recorded from now on.
func (l *EventLog) SetStart(t time.Time) {
	l.mu.Lock()
	l.start = t
	l.mu.Unlock()
}

// Sorted returns the events ordered by time, then replica, then the
// order the replica recorded them in, and how many were dropped.
func (l *EventLog) Sorted() (events []reports.Event, drops int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sortEvents(l.events)
	events = make([]reports.Event, len(l.events))
	for i, e := range l.events {
		events[i] = e.Event
	}
	return events, l.drops
}

func sortEvents(es []loggedEvent) {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := &es[i], &es[j]
		if a.TimeS != b.TimeS {
			return a.TimeS < b.TimeS
		}
		if a.replica != b.replica {
			return a.replica < b.replica
		}
		return a.seq < b.seq
	})
}

// NewBalancers builds exp.Replicas independent balancers of strategy name
// (replica 0 seeded as a single balancer is), with the instances' weights,
// one shared load board (see LoadPolling), and with the instances that
// join later left out of the host set. Events
// are recorded in events from then on. Both engines build them here, so a
// strategy sees the same seed, weights and host set in each.
func NewBalancers(exp *experiments.Experiment, name string, clock strategies.Clock, events *EventLog) ([]*strategies.Balancer, error) {
	return GeneratorBalancers(exp, name, clock, 0, 1, events)
}

// GeneratorBalancers builds the exp.Replicas balancers of generator gen of
// gens: its replica r is replica gens*r+gen of a single process running
// gens*exp.Replicas replicas, seeded as that one is. Request k goes to
// generator k mod gens and, there, to replica (k div gens) mod
// exp.Replicas, which is replica k mod (gens*exp.Replicas) of the single
// process: gens generators of R replicas are one process of gens*R
// replicas, spread.
func GeneratorBalancers(exp *experiments.Experiment, name string, clock strategies.Clock, gen, gens int, events *EventLog) ([]*strategies.Balancer, error) {
	return GeneratorBalancersWithout(exp, name, clock, gen, gens, events, nil)
}

// GeneratorBalancersWithout is GeneratorBalancers whose balancers leave
// the instances absent out of their members (Balancer.SetMembers) from
// the start, recording no event for them: instances that do not exist
// yet, which the generator's discovery adds once they do (lbchaos
// generate --target none). Their later joins are recorded.
func GeneratorBalancersWithout(exp *experiments.Experiment, name string, clock strategies.Clock, gen, gens int, events *EventLog, absent []int) ([]*strategies.Balancer, error) {
	n := exp.EdgeCount() // with tiers, the client balances over the first
	spec := experiments.EdgeStrategy(name)
	var armed atomic.Bool
	initial := make([]int, 0, n)
	for id := range n {
		if exp.Instances.Instance(id).JoinAt == 0 {
			initial = append(initial, id)
		}
	}
	lbs := make([]*strategies.Balancer, max(1, exp.Replicas))
	board := strategies.NewLoadBoard() // read only by strategies with LoadReports
	for r := range lbs {
		global := gens*r + gen
		seedName := name
		if global > 0 {
			seedName = fmt.Sprintf("%s#%d", name, global)
		}
		env := strategies.Env{
			N:     n,
			Clock: clock,
			Rand:  StrategySeed(exp.Seed, seedName),
			Events: func(e strategies.Event) {
				if armed.Load() {
					events.AddFrom(global, e)
				}
			},
			Weights:     exp.Instances.Weights(),
			Connections: exp.Connections,
			Loads:       board,
		}
		if z := exp.ReplicaZone(global); z >= 0 {
			// The replica is a client of zone z (see experiments.Zone).
			env.Zones, env.LocalZone, env.ZoneClients = exp.InstanceZones(n), exp.Zones[z].Name, exp.ZoneClients()
		}
		lb, err := strategies.New(spec, env)
		if err != nil {
			return nil, err
		}
		if len(initial) < n {
			if err := lb.SetHosts(initial); err != nil {
				return nil, err
			}
		}
		if len(absent) > 0 {
			if err := lb.SetMembers(members(n, absent)); err != nil {
				return nil, err
			}
		}
		lbs[r] = lb
	}
	armed.Store(true)
	return lbs, nil
}

// members returns the instances 0..n-1 but those of absent.
func members(n int, absent []int) []int {
	ids := []int{}
	for id := range n {
		if !slices.Contains(absent, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// Ejections sums the ejections of every balancer.
func Ejections(lbs []*strategies.Balancer) int {
	n := 0
	for _, lb := range lbs {
		n += lb.Ejections()
	}
	return n
}

// PolicyStats sums the retry and hedge decisions of every balancer; nil
// when they have no such policy.
func PolicyStats(lbs []*strategies.Balancer) *reports.RetryStats {
	var out *reports.RetryStats
	for _, lb := range lbs {
		if p := lb.Policy(); p != nil {
			st := p.Stats()
			out = addRetryStats(out, &reports.RetryStats{Retries: st.Retries, RetriesRefused: st.RetriesRefused, Hedges: st.Hedges, HedgesWon: st.HedgesWon})
		}
	}
	return out
}

// JoinSteps returns, in time order, when the host set grows and the host
// set from then on.
func JoinSteps(exp *experiments.Experiment) (at []time.Duration, hosts [][]int) {
	joining := exp.Instances.Joining()
	for i, id := range joining {
		t := exp.Instances.Instance(id).JoinAt
		if i+1 < len(joining) && exp.Instances.Instance(joining[i+1]).JoinAt == t {
			continue // joins at the same time are one update
		}
		var set []int
		for h := range exp.Instances.Count {
			if j := exp.Instances.Instance(h).JoinAt; j <= t {
				set = append(set, h)
			}
		}
		at, hosts = append(at, t), append(hosts, set)
	}
	return at, hosts
}

// SetUtilization sets in's utilization from busy worker-seconds over span,
// the time from the start of the attack until its last request ended;
// instances without a worker limit have none.
func SetUtilization(in *reports.Instance, busyS float64, workers int, span time.Duration) {
	if workers <= 0 || span <= 0 {
		return
	}
	u := min(1, busyS/(float64(workers)*span.Seconds()))
	in.Utilization = &u
}
