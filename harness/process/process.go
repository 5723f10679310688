// Package process is the provider whose backends run inside this process,
// each a real HTTP server (faultyserver.Server) on its own 127.0.0.1 port.
// It needs nothing but Go, and offers no container faults. Its fleets
// report their servers' panics (fleet.Watcher, see crash.go).
package process

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/fleet"
)

// Provider runs every backend inside this process.
type Provider struct {
	// Token is the control token of every backend it starts, which their
	// Backend.Control clients send; "" gives each fleet a fresh random one.
	Token string
}

var (
	_ fleet.Provider  = Provider{}
	_ fleet.InProcess = Provider{}
	_ fleet.Watcher   = (*processFleet)(nil)
	_ fleet.Tiered    = (*processFleet)(nil)
)

// Name implements fleet.Provider.
func (Provider) Name() string { return "process" }

// InProcess implements fleet.InProcess: the servers hold the other end of
// every connection in this process.
func (Provider) InProcess() bool { return true }

// Start implements fleet.Provider.
func (p Provider) Start(ctx context.Context, spec fleet.Spec) (fleet.Fleet, error) {
	f := &processFleet{crashes: newCrashes(spec.Count)}
	quiet := log.New(io.Discard, "", 0)
	token := cmp.Or(p.Token, faultyserver.NewToken())
	for id := range spec.Count {
		cfg := spec.ServerConfig(id)
		cfg.Token = token
		cfg.OnPanic = func(pn faultyserver.Panic) { f.panicked(id, pn) }
		srv, err := faultyserver.New(cfg)
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
			Protocols:         faultyserver.Protocols(), // HTTP/1.1 and h2c, as a served instance
			ConnContext:       faultyserver.ConnContext, // a connection-scope reset closes the connection
			ReadHeaderTimeout: 10 * time.Second,
			// The reset fault hijacks and kills connections on purpose;
			// the server's complaints about that are noise.
			ErrorLog: quiet,
		}
		base := &url.URL{Scheme: "http", Host: ln.Addr().String()}
		f.servers = append(f.servers, srv)
		f.https = append(f.https, hs)
		f.backends = append(f.backends, fleet.Backend{
			ID:      id,
			URL:     base,
			Control: &faultyserver.Client{BaseURL: base.String(), Token: token},
		})
		f.wg.Add(1)
		srv.Go(fmt.Sprintf("the HTTP server of instance %d", id), func() {
			defer f.wg.Done()
			if err := hs.Serve(srv.Listener(ln)); err != nil && !errors.Is(err, http.ErrServerClosed) {
				quiet.Printf("instance %d: %v", id, err)
			}
		})
	}
	return f, nil
}

type processFleet struct {
	backends []fleet.Backend
	servers  []*faultyserver.Server
	https    []*http.Server
	wg       sync.WaitGroup
	once     sync.Once
	crashes  *crashes // panics of the servers, for Watch
}

func (f *processFleet) Backends() []fleet.Backend { return f.backends }

func (f *processFleet) Close() error {
	f.once.Do(func() {
		for _, s := range f.servers {
			s.Close()
		}
		for _, h := range f.https {
			_ = h.Close()
		}
		f.wg.Wait()
		for _, s := range f.servers {
			s.Release()
		}
	})
	return nil
}

// SetDownstream implements fleet.Tiered: the servers run in this
// process, so the caller's code runs in their handlers.
func (f *processFleet) SetDownstream(id int, d faultyserver.Downstream) {
	f.servers[id].SetDownstream(d)
}
