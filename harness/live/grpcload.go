package live

import (
	"context"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/transport"
	"github.com/lbchaos/lbchaos/strategies"
)

// grpcLoad is the gRPC load (protocol: grpc): calls instead of requests,
// paced by the same schedule and routed by a built-in strategy over
// per-instance connections or by grpc-go's own policy.
type grpcLoad struct {
	grpcClient
	tc       *transport.Client // a built-in strategy's; nil for a gRPC policy
	attacker *grpcAttacker
	targeter vegeta.Targeter
	note     string
}

// newGRPCLoad builds strategy name's gRPC clients to targets (by instance
// id) and waits, for at most ten seconds, for their connections: a
// built-in strategy picks with lbs through a transport client of conns
// connections per instance (which also carries its health probes); a
// gRPC strategy records its subchannels' state changes in events once
// armed is set. *start is the attack's start.
func newGRPCLoad(ctx context.Context, exp *experiments.Experiment, name string, lbs []*strategies.Balancer, targets []*url.URL, conns int,
	events *engine.EventLog, armed *atomic.Bool, start *time.Time) (*grpcLoad, error) {
	l := &grpcLoad{attacker: newGRPCAttacker(), targeter: newTargeter(exp, start, 0, 1), note: grpcNote(name, exp.Connections, exp.Replicas)}
	var err error
	if strategies.IsGRPC(name) {
		var initial []int
		for id := range exp.Instances.Count {
			if exp.Instances.Instance(id).JoinAt == 0 {
				initial = append(initial, id)
			}
		}
		l.grpcClient, err = newGRPCPolicyClient(name, exp.Replicas, targets, initial, exp.Timeout, events, armed)
	} else {
		l.tc = transport.NewClient(lbs, targets, exp.Timeout, conns)
		if l.grpcClient, err = newGRPCBuiltinClient(name, l.tc, len(lbs), targets, exp.Connections); err != nil {
			l.tc.Close()
		}
	}
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	l.connect(cctx)
	cancel()
	return l, nil
}

func (l *grpcLoad) send(p vegeta.Pacer, du time.Duration) <-chan *vegeta.Result {
	return l.attacker.attack(p, du, func(seq uint64) *vegeta.Result {
		var t vegeta.Target
		_ = l.targeter(&t) // never fails
		var sreq strategies.Request
		if v := t.Header.Get(strategies.KeyHeader); v != "" {
			if k, perr := parseKey(v); perr == nil {
				sreq = strategies.Request{Key: k, HasKey: true}
			}
		}
		return l.call(seq, pathOf(t.URL), sreq)
	})
}

func (l *grpcLoad) Stop() bool                { return l.attacker.Stop() }
func (l *grpcLoad) moved(id int, u *url.URL)  { l.setTarget(id, u) }
func (l *grpcLoad) client() *transport.Client { return l.tc }
func (l *grpcLoad) notes() []string           { return []string{l.note} }

func (l *grpcLoad) close() {
	l.grpcClient.close()
	if l.tc != nil {
		l.tc.Close() // its HTTP transport served the health probes
	}
}

// grpcNote says how strategy name's calls travelled.
func grpcNote(name string, connections, replicas int) string {
	if strategies.IsGRPC(name) {
		return fmt.Sprintf("%s: grpc-go's own policy in %d grpc.ClientConn (one per replica), one HTTP/2 connection per instance each; "+
			"its subchannel state changes are the subchannel-* events.", name, max(1, replicas))
	}
	return fmt.Sprintf("%s: gRPC calls, the built-in strategy picking per call; each replica holds %d HTTP/2 connection(s) to each instance.", name, max(1, connections))
}
