package faultyserver

import (
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/lbchaos/lbchaos/faultyserver/upstream"
)

// The sidecar's gRPC face. A gRPC call to the sidecar, of any method, is
// forwarded as the HTTP/2 exchange it is — headers, every message of
// either direction as it comes, trailers, and the client's cancellation
// as a reset stream — to the upstream (SidecarConfig.GRPCUpstream when
// set) over h2c (HTTP/2 with prior knowledge), under the same fault plan
// as an HTTP request. The sidecar needs no knowledge of the user's
// service: it never decodes a message.
//
// Its own answers (a failure, a closed instance, an unreachable upstream)
// are gRPC statuses, answered Trailers-Only (one HEADERS frame ending the
// stream), and so is an upstream's Trailers-Only answer: grpc-go's client
// retries only a failure answered so (see trailersOnly). Every answer
// carries the instance and load in its first metadata block (header
// metadata; trailer metadata for a Trailers-Only answer) and an ORCA load
// report (ORCATrailerKey) from the sidecar's counters in its last (the
// trailer metadata), which replaces any report of the upstream's: a
// client accepts at most one per call.

// Canonical forms of the gRPC metadata keys as net/http holds them.
var (
	hdrORCA        = http.CanonicalHeaderKey(ORCATrailerKey)
	hdrGRPCStatus  = http.CanonicalHeaderKey("grpc-status")
	hdrGRPCMessage = http.CanonicalHeaderKey("grpc-message")
	grpcProtoCT    = []string{"application/grpc"}
)

// newH2CTransport returns the transport gRPC calls are forwarded on.
func newH2CTransport() *http.Transport {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &http.Transport{
		Protocols:          &p,
		DialContext:        (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		IdleConnTimeout:    90 * time.Second,
		DisableCompression: true,
	}
}

// serveGRPC carries out the current fault's plan for one gRPC call.
func (s *Sidecar) serveGRPC(w http.ResponseWriter, r *http.Request) {
	s.handle(sidecarAnswer{s, w, r, true})
}

// relayGRPC relays the upstream's answer to a forwarded call, resp with
// its body read from body, with the sidecar's metadata and load report;
// client is the call's context.
func (s *Sidecar) relayGRPC(client context.Context, w http.ResponseWriter, resp *http.Response, body io.Reader) {
	h := w.Header()
	rc := http.NewResponseController(w)
	if st, ok := resp.Header[hdrGRPCStatus]; ok {
		// Trailers-Only: the upstream's status and metadata came in one
		// block, which a client reads as trailer metadata. Answer the same
		// way, with the sidecar's instance, load and load report in it.
		_, _ = io.Copy(io.Discard, body)
		load := s.countGRPC(resp.StatusCode, st)
		upstream.CopyEndToEnd(h, resp.Header)
		if _, ok := h["Content-Type"]; !ok {
			h["Content-Type"] = grpcProtoCT
		}
		s.trailersOnly(h, load)
		w.WriteHeader(resp.StatusCode)
		return
	}
	upstream.CopyEndToEnd(h, resp.Header)
	delete(h, hdrORCA)
	h[InstanceHeader] = s.ident().header
	setLoad(h, int(s.inFlight.Load())-1)
	w.WriteHeader(resp.StatusCode)
	_ = rc.Flush() // the headers, for a stream whose first message is late
	if err := upstream.Relay(w, body, func(bool) { _ = rc.Flush() }); err != nil {
		s.cutShort(client)
	}
	for k, vs := range resp.Trailer {
		if k != hdrORCA {
			h[http.TrailerPrefix+k] = vs
		}
	}
	load := s.countGRPC(resp.StatusCode, resp.Trailer[hdrGRPCStatus])
	h[http.TrailerPrefix+hdrORCA] = []string{s.orcaValue(load)}
}

// cutShort ends a relayed call whose answer broke off (the upstream's
// stream failed, or the client went away), resetting its stream so that
// the client sees it broken rather than complete.
func (s *Sidecar) cutShort(client context.Context) {
	if client.Err() != nil {
		s.dropped.Add(1)
	} else {
		s.countAnswer(true)
	}
	panic(http.ErrAbortHandler)
}

// countGRPC counts a relayed answer, served when its HTTP status is 200
// and its grpc-status 0, else failed, and returns the load to report
// with it (the forwarded calls but this one).
func (s *Sidecar) countGRPC(httpStatus int, grpcStatus []string) (load int) {
	s.countAnswer(httpStatus != http.StatusOK || len(grpcStatus) != 1 || grpcStatus[0] != "0")
	return int(s.inFlight.Load()) - 1
}

// grpcError answers a gRPC call with status code (OK meaning UNAVAILABLE)
// Trailers-Only, with the instance, load and a load report, as grpc-go's
// server answers a call failed before any message.
func (s *Sidecar) grpcError(w http.ResponseWriter, load int, code codes.Code, msg string) {
	if code == codes.OK {
		code = codes.Unavailable
	}
	h := w.Header()
	h["Content-Type"] = grpcProtoCT
	h[hdrGRPCStatus] = []string{strconv.Itoa(int(code))}
	h[hdrGRPCMessage] = []string{percentEncode(msg)}
	s.trailersOnly(h, load)
	w.WriteHeader(http.StatusOK)
}

// trailersOnly completes h, the one block of a Trailers-Only answer
// carrying load, with the sidecar's instance, load and load report, and
// keeps net/http from adding fields to it (see trailersOnly in
// grpcserver.go); the handler then writes the header and no body.
func (s *Sidecar) trailersOnly(h http.Header, load int) {
	h[InstanceHeader] = s.ident().header
	setLoad(h, load)
	h[hdrORCA] = []string{s.orcaValue(load)}
	delete(h, "Trailer")
	h["Content-Length"] = nil
	if _, ok := h["Date"]; !ok {
		h["Date"] = nil
	}
}

// orcaValue is the sidecar's load report for an answer carrying load, as
// the value of ORCATrailerKey: a binary OrcaLoadReport, base64 as gRPC
// sends binary metadata.
func (s *Sidecar) orcaValue(load int) string {
	return encodeORCA(s.window.report(load))
}

// encodeORCA encodes rep as an ORCA load report's metadata value.
func encodeORCA(rep loadReport) string {
	b, err := proto.Marshal(&v3orcapb.OrcaLoadReport{
		ApplicationUtilization: rep.Utilization,
		RpsFractional:          rep.RPS,
		Eps:                    rep.EPS,
		NamedMetrics:           map[string]float64{ORCAInFlightMetric: float64(rep.Load)},
	})
	if err != nil {
		return ""
	}
	return base64.RawStdEncoding.EncodeToString(b)
}

// percentEncode encodes a grpc-message value: bytes outside printable
// ASCII, and '%', as %XX (gRPC over HTTP/2, "Responses").
func percentEncode(msg string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c >= 0x20 && c <= 0x7e && c != '%' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
