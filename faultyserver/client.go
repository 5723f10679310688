package faultyserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Client drives the control API of one instance over HTTP, whether the
// instance runs in-process or in a container.
type Client struct {
	// BaseURL is the instance's root, e.g. "http://127.0.0.1:8081".
	BaseURL string
	// HTTP sends the requests; nil means a client with a DefaultClientTimeout
	// timeout. The health check goes through it as it is; a request under
	// ControlPrefix goes through a copy that opens a connection for it
	// alone (see controlClient).
	HTTP *http.Client
	// Token, when set, is sent as Authorization: Bearer <Token> on every
	// control API request (not on the health check, which a sidecar
	// forwards to its upstream).
	Token string
}

// DefaultClientTimeout is the timeout of the client used when Client.HTTP is
// nil.
const DefaultClientTimeout = 5 * time.Second

var (
	defaultHTTPClient    = &http.Client{Timeout: DefaultClientTimeout}
	defaultControlClient = controlClient(defaultHTTPClient)
)

// controlClient is hc for control requests: the same but for its
// transport, which keeps no connection alive, so that a control request
// never rides a connection of the data path. An instance exempts a
// connection from its connection faults by the first request on it
// (ConnFault), so a control request on a connection a health check opened
// would be blackholed with it; the instance closes the connection of each
// control request after its answer anyway. A transport other than an
// *http.Transport is kept, and the request asks it to close its
// connection (Request.Close).
func controlClient(hc *http.Client) *http.Client {
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	if t, ok := rt.(*http.Transport); ok {
		t = t.Clone()
		t.DisableKeepAlives = true
		rt = t
	}
	return &http.Client{Transport: rt, CheckRedirect: hc.CheckRedirect, Jar: hc.Jar, Timeout: hc.Timeout}
}

// APIError is a non-success answer from an instance.
type APIError struct {
	Op         string // e.g. "set fault"
	URL        string
	StatusCode int
	Message    string // the control API's "error" text, or the body
}

func (e *APIError) Error() string {
	return fmt.Sprintf("faultyserver: %s %s: %d %s: %s", e.Op, e.URL, e.StatusCode, http.StatusText(e.StatusCode), e.Message)
}

// SetFault replaces the instance's fault. A rejected fault yields an
// *APIError whose Message is the instance's explanation.
func (c *Client) SetFault(ctx context.Context, f Fault) error {
	b, err := MarshalFault(f)
	if err != nil {
		return fmt.Errorf("faultyserver: set fault: %w", err)
	}
	return c.do(ctx, "set fault", http.MethodPut, FaultPath, b, http.StatusOK, nil)
}

// ClearFault removes the instance's fault.
func (c *Client) ClearFault(ctx context.Context) error {
	return c.do(ctx, "clear fault", http.MethodDelete, FaultPath, nil, http.StatusNoContent, nil)
}

// Fault returns the instance's current fault, nil when none.
func (c *Client) Fault(ctx context.Context) (Fault, error) {
	var spec FaultSpec
	if err := c.do(ctx, "get fault", http.MethodGet, FaultPath, nil, http.StatusOK, &spec); err != nil {
		return nil, err
	}
	return spec.Fault, nil
}

// Stats returns the instance's counters.
func (c *Client) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := c.do(ctx, "stats", http.MethodGet, StatsPath, nil, http.StatusOK, &st)
	return st, err
}

// Reset clears the instance's fault and zeroes its counters.
func (c *Client) Reset(ctx context.Context) error {
	return c.do(ctx, "reset", http.MethodPost, ResetPath, nil, http.StatusNoContent, nil)
}

// Identify gives an instance started Unidentified its id and seed
// (IdentityPath); naming it again with the same is a no-op.
func (c *Client) Identify(ctx context.Context, id Identity) error {
	body, err := json.Marshal(id)
	if err != nil {
		return err
	}
	return c.do(ctx, "identify", http.MethodPut, IdentityPath, body, http.StatusOK, nil)
}

// Healthy returns nil when the instance's health check answers 200.
func (c *Client) Healthy(ctx context.Context) error {
	return c.do(ctx, "health check", http.MethodGet, HealthPath, nil, http.StatusOK, nil)
}

// Do sends one request of another API that works as the control API
// does (under ControlPrefix, the run's token, JSON bodies, errors as
// {"error": ...}: a load generator's endpoints API), as do.
func (c *Client) Do(ctx context.Context, op, method, path string, body []byte, want int, out any) error {
	return c.do(ctx, op, method, path, body, want, out)
}

// do sends one control request and decodes the answer into out (when not
// nil). Any status other than want is an *APIError: a 2xx with the wrong
// status means BaseURL does not point at an instance's root.
func (c *Client) do(ctx context.Context, op, method, path string, body []byte, want int, out any) error {
	data, url, err := c.exchange(ctx, op, method, path, body, want, MaxControlBody)
	if err != nil || out == nil {
		return err
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("faultyserver: %s %s: decoding answer: %w", op, url, err)
	}
	return nil
}

// exchange sends one control request and returns the answer's body, read
// up to limit bytes, and the URL asked; any status other than want is an
// *APIError.
func (c *Client) exchange(ctx context.Context, op, method, path string, body []byte, want int, limit int64) ([]byte, string, error) {
	url := strings.TrimSuffix(c.BaseURL, "/") + path
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, url, fmt.Errorf("faultyserver: %s: %w", op, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	control := strings.HasPrefix(path, ControlPrefix)
	if c.Token != "" && control {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	switch {
	case !control && hc == nil:
		hc = defaultHTTPClient
	case hc == nil:
		hc = defaultControlClient
	case control:
		hc = controlClient(hc)
	}
	req.Close = control
	resp, err := hc.Do(req)
	if err != nil {
		return nil, url, fmt.Errorf("faultyserver: %s: %w", op, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, MaxControlBody))
		return nil, url, apiError(op, url, resp.StatusCode, data)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, url, fmt.Errorf("faultyserver: %s %s: reading answer: %w", op, url, err)
	}
	return data, url, nil
}

// apiError is the *APIError of an answer with status and body data: the
// control API's "error" text, or else the body.
func apiError(op, url string, status int, data []byte) *APIError {
	msg := strings.TrimSpace(string(data))
	var eb errorBody
	if json.Unmarshal(data, &eb) == nil && eb.Error != "" {
		msg = eb.Error
	}
	return &APIError{Op: op, URL: url, StatusCode: status, Message: msg}
}
