package kube

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport/spdy"
)

// The control API of a pod on the pod network is reached through the API
// server's port forwarding (pods/portforward), never on the pod's own
// address: this machine's network namespace sends nothing to a pod IP. An
// HTTP client whose dial opens a forwarding stream to the pod's port
// serves the control client (faultyserver.Client) as a loopback address
// would: its base URL names the pod, http://<pod>.<forwardHost>:<port>.

// portForwardProtocol is the subprotocol of pods/portforward (client-go's
// portforward.PortForwardProtocolV1Name).
const portForwardProtocol = "portforward.k8s.io"

// forwardHost ends the host of a forwarded base URL.
const forwardHost = "portforward.lbchaos"

// forwardURL is the base URL the forwarding client reaches pod's port at.
func forwardURL(pod string, port int) string {
	return "http://" + pod + "." + forwardHost + ":" + strconv.Itoa(port)
}

// forwarder dials pods' ports through the API server.
type forwarder struct {
	cfg *rest.Config
	ns  string

	once      sync.Once
	transport *http.Transport
}

// client is an HTTP client whose connections go through port forwarding;
// every client shares one transport, so its idle connections (one SPDY
// stream pair each) are reused, not left one set per client.
func (f *forwarder) client(timeout time.Duration) *http.Client {
	f.once.Do(func() {
		f.transport = &http.Transport{
			DialContext:         f.dial,
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     30 * time.Second,
		}
	})
	return &http.Client{Timeout: timeout, Transport: f.transport}
}

// dial opens a connection to addr (<pod>.forwardHost:port): one SPDY
// connection to the API server per dial, with its error and data streams.
func (f *forwarder) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	pod, ok := strings.CutSuffix(host, "."+forwardHost)
	if !ok {
		return nil, fmt.Errorf("port forward: %s is not a pod's forwarded address", addr)
	}
	rt, upgrader, err := spdy.RoundTripperFor(f.cfg)
	if err != nil {
		return nil, err
	}
	u, err := podURL(f.cfg, f.ns, pod, "portforward")
	if err != nil {
		return nil, err
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	type dialed struct {
		conn httpstream.Connection
		err  error
	}
	ch := make(chan dialed, 1)
	go func() {
		c, _, err := dialer.Dial(portForwardProtocol)
		ch <- dialed{c, err}
	}()
	var sc httpstream.Connection
	select {
	case d := <-ch:
		if d.err != nil {
			return nil, fmt.Errorf("port forward to pod %s/%s: %w", f.ns, pod, d.err)
		}
		sc = d.conn
	case <-ctx.Done():
		go func() {
			if d := <-ch; d.conn != nil {
				d.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}
	h := http.Header{}
	h.Set(corev1.StreamType, corev1.StreamTypeError)
	h.Set(corev1.PortHeader, port)
	h.Set(corev1.PortForwardRequestIDHeader, "0")
	errStream, err := sc.CreateStream(h)
	if err != nil {
		sc.Close()
		return nil, fmt.Errorf("port forward to pod %s/%s: %w", f.ns, pod, err)
	}
	errStream.Close() // nothing is written to it
	h.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := sc.CreateStream(h)
	if err != nil {
		sc.Close()
		return nil, fmt.Errorf("port forward to pod %s/%s: %w", f.ns, pod, err)
	}
	c := &forwardConn{Stream: data, sc: sc, addr: forwardAddr(addr)}
	go func() {
		// The kubelet writes here when it cannot connect to the port.
		if msg, _ := io.ReadAll(errStream); len(msg) > 0 {
			c.fail(fmt.Errorf("port forward to pod %s/%s port %s: %s", f.ns, pod, port, msg))
		}
	}()
	return c, nil
}

// podURL is the URL of a pod's subresource.
func podURL(cfg *rest.Config, ns, pod, sub string) (*url.URL, error) {
	base, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	base.Path = strings.TrimSuffix(base.Path, "/") + "/api/v1/namespaces/" + ns + "/pods/" + pod + "/" + sub
	return base, nil
}

// forwardConn is a data stream as a net.Conn; closing it closes its SPDY
// connection.
type forwardConn struct {
	httpstream.Stream
	sc   httpstream.Connection
	addr forwardAddr
	once sync.Once
	mu   sync.Mutex
	err  error
}

func (c *forwardConn) fail(err error) {
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
	c.Close()
}

func (c *forwardConn) Read(b []byte) (int, error) {
	n, err := c.Stream.Read(b)
	if err != nil {
		c.mu.Lock()
		if c.err != nil {
			err = c.err
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *forwardConn) Close() error {
	c.once.Do(func() {
		c.Stream.Reset()
		c.sc.Close()
	})
	return nil
}

func (c *forwardConn) LocalAddr() net.Addr              { return forwardAddr("local") }
func (c *forwardConn) RemoteAddr() net.Addr             { return c.addr }
func (c *forwardConn) SetDeadline(time.Time) error      { return nil }
func (c *forwardConn) SetReadDeadline(time.Time) error  { return nil }
func (c *forwardConn) SetWriteDeadline(time.Time) error { return nil }

type forwardAddr string

func (a forwardAddr) Network() string { return "portforward" }
func (a forwardAddr) String() string  { return string(a) }
