package faultyserver

import (
	"context"
	"errors"
	"net/http"
	"time"

	"google.golang.org/grpc/codes"
)

// Downstream is what an instance of a tier calls for every request it
// serves, after its own work (its service time on a worker, which it
// releases first: waiting on a downstream call holds no worker, as in an
// asynchronous server). Call returns nil when the request's calls all
// succeeded; the instance then answers 200, else 502. How the calls are
// made (the balancer, the retries) is the caller's: the server only runs
// them, under the request's context, which ends when its client goes
// away (or, with KeepAbandoned, at the next Reset).
type Downstream interface {
	Call(ctx context.Context) error
}

// SetDownstream makes every request served from now on call d after its
// work; nil stops it. Set it before load arrives: a request in progress
// keeps what it found.
func (s *Server) SetDownstream(d Downstream) {
	if d == nil {
		s.down.Store(nil)
		return
	}
	s.down.Store(&d)
}

// errDownstream ends a request whose downstream calls failed.
var errDownstream = errors.New("downstream failed")

// workAndCall is work followed by the request's downstream calls, if the
// server has any.
func (s *Server) workAndCall(ctx context.Context, d time.Duration) (int, error) {
	load, err := s.work(ctx, d)
	if err != nil {
		return load, err
	}
	dp := s.down.Load()
	if dp == nil {
		return load, nil
	}
	if err := (*dp).Call(ctx); err != nil {
		if ctx.Err() != nil {
			return load, ctx.Err() // its client went away: dropped
		}
		return load, errDownstream
	}
	return load, nil
}

// answerDownstream answers a request whose downstream calls failed:
// 502, as a gateway answers when its upstream did not serve.
func answerDownstream[A serverAnswerer](s *Server, w A, load int) {
	answerFault(&s.instanceState, w, load, http.StatusBadGateway, codes.OK, "downstream failed")
}
