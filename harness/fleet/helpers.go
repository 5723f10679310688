package fleet

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
)

// What the providers of servers they start (containers, pods) share.

// FreeLoopbackPorts returns n distinct free 127.0.0.1 ports for servers
// that share the host's network namespace, holding each until all are
// found: ports asked for one after the other may repeat. Another process
// could take one before its server binds it; the server then fails to
// start and its provider's error says so.
func FreeLoopbackPorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// WaitHealthy polls the health check of the server at base until it
// answers or timeout passes.
func WaitHealthy(ctx context.Context, base string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctl := &faultyserver.Client{BaseURL: base}
	for {
		err := ctl.Healthy(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not healthy within %v: %w", timeout, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ResetServer resets a reused instance's server through its control API
// (fault cleared, counters zeroed, random source reseeded) and waits, up
// to timeout, until no request of the previous fleet is left in it.
func ResetServer(ctx context.Context, ctl *faultyserver.Client, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := ctl.Reset(ctx); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	for {
		st, err := ctl.Stats(ctx)
		if err != nil {
			return err
		}
		if st.InFlight == 0 && st.Queued == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still holds %d requests in flight and %d queued", st.InFlight, st.Queued)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
