package faultyserver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxExecutedBody bounds ExecutedPath's answer as the client reads it:
// MaxExecuted numbers of up to three bytes each, and some.
const maxExecutedBody = 3*MaxExecuted + 1<<20

// Executed returns the sequence numbers of the requests the instance
// executed since it started or was last reset (see ExecutedPath). An
// instance that predates the endpoint answers 404, an *APIError.
func (c *Client) Executed(ctx context.Context) (Executed, error) {
	const op = "executed"
	url := strings.TrimSuffix(c.BaseURL, "/") + ExecutedPath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Executed{}, fmt.Errorf("faultyserver: %s: %w", op, err)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTPClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Executed{}, fmt.Errorf("faultyserver: %s: %w", op, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, MaxControlBody))
		return Executed{}, apiError(op, url, resp.StatusCode, data)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxExecutedBody))
	if err != nil {
		return Executed{}, fmt.Errorf("faultyserver: %s %s: reading answer: %w", op, url, err)
	}
	x, err := ParseExecuted(data)
	if err != nil {
		return Executed{}, fmt.Errorf("faultyserver: %s %s: %w", op, url, err)
	}
	return x, nil
}
