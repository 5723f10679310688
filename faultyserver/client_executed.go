package faultyserver

import (
	"context"
	"fmt"
	"net/http"
)

// maxExecutedBody bounds ExecutedPath's answer as the client reads it:
// MaxExecuted numbers of up to three bytes each, and some.
const maxExecutedBody = 3*MaxExecuted + 1<<20

// Executed returns the sequence numbers of the requests the instance
// executed since it started or was last reset (see ExecutedPath). An
// instance that predates the endpoint answers 404, an *APIError.
func (c *Client) Executed(ctx context.Context) (Executed, error) {
	data, url, err := c.exchange(ctx, "executed", http.MethodGet, ExecutedPath, nil, http.StatusOK, maxExecutedBody)
	if err != nil {
		return Executed{}, err
	}
	x, err := ParseExecuted(data)
	if err != nil {
		return Executed{}, fmt.Errorf("faultyserver: executed %s: %w", url, err)
	}
	return x, nil
}
