package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
)

// FleetSpec describes the backends one strategy runs against: the
// experiment's instances, and the run's seed (mixed with each instance id).
type FleetSpec struct {
	experiments.Instances
	Seed uint64
}

// equal reports whether f and g describe the same fleet.
func (f FleetSpec) equal(g FleetSpec) bool {
	a, b := f.Instances, g.Instances
	return f.Seed == g.Seed && a.Count == b.Count && a.Workers == b.Workers && a.QueueLimit == b.QueueLimit &&
		a.KeepAbandoned == b.KeepAbandoned && a.Service == b.Service && slices.Equal(a.Each, b.Each)
}

// Backend is one running instance.
type Backend struct {
	ID      int
	URL     *url.URL             // base URL the balancer sends requests to
	Control *faultyserver.Client // its control API
}

// Fleet is a set of running backends, indexed by instance id.
type Fleet interface {
	Backends() []Backend
	// Close stops every backend and releases what they hold; idempotent.
	Close() error
}

// Provider starts fleets of backends.
type Provider interface {
	Name() string // recorded in summary.json as "backends"
	Start(ctx context.Context, spec FleetSpec) (Fleet, error)
}

// InstanceSeed derives instance id's seed from a run seed (SplitMix64), so
// that instances draw independent but reproducible service times.
func InstanceSeed(seed uint64, id int) uint64 {
	z := seed + 0x9e3779b97f4a7c15*uint64(id+1)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// ProcessProvider runs every backend inside this process, each a real HTTP
// server on its own 127.0.0.1 port. It needs nothing but Go.
type ProcessProvider struct{}

var _ Provider = ProcessProvider{}

// Name implements Provider.
func (ProcessProvider) Name() string { return "process" }

// Start implements Provider.
func (ProcessProvider) Start(ctx context.Context, spec FleetSpec) (Fleet, error) {
	f := &processFleet{}
	quiet := log.New(io.Discard, "", 0)
	for id := range spec.Count {
		in := spec.Instance(id)
		srv, err := faultyserver.New(faultyserver.Config{
			ID:            id,
			Workers:       in.Workers,
			QueueLimit:    spec.QueueLimit,
			Service:       in.Service,
			Seed:          InstanceSeed(spec.Seed, id),
			KeepAbandoned: spec.KeepAbandoned,
		})
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("instance %d: %w", id, err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			srv.Close()
			f.Close()
			return nil, fmt.Errorf("instance %d: listen on 127.0.0.1: %w", id, err)
		}
		hs := &http.Server{
			Handler:           srv,
			ReadHeaderTimeout: 10 * time.Second,
			// The reset fault hijacks and kills connections on purpose;
			// the server's complaints about that are noise.
			ErrorLog: quiet,
		}
		base := &url.URL{Scheme: "http", Host: ln.Addr().String()}
		f.servers = append(f.servers, srv)
		f.https = append(f.https, hs)
		f.backends = append(f.backends, Backend{
			ID:      id,
			URL:     base,
			Control: &faultyserver.Client{BaseURL: base.String()},
		})
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				quiet.Printf("instance %d: %v", id, err)
			}
		}()
	}
	return f, nil
}

type processFleet struct {
	backends []Backend
	servers  []*faultyserver.Server
	https    []*http.Server
	wg       sync.WaitGroup
	once     sync.Once
}

func (f *processFleet) Backends() []Backend { return f.backends }

func (f *processFleet) Close() error {
	f.once.Do(func() {
		for _, s := range f.servers {
			s.Close()
		}
		for _, h := range f.https {
			_ = h.Close()
		}
		f.wg.Wait()
	})
	return nil
}
