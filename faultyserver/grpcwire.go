package faultyserver

import (
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
)

// The gRPC face of an instance. Beside HTTP/1.1 and h2c, every instance
// (fake server or sidecar) serves one unary method on the same port: the
// load generator's gRPC call. Its messages are protobuf well-known types,
// so neither side needs generated code:
//
//	request:  google.protobuf.StringValue — the request's path (informational)
//	response: google.protobuf.BytesValue — the body the HTTP answer would carry
//
// The instance id rides in the response's first metadata under
// GRPCInstanceKey (also on failures, as HTTP's InstanceHeader does), the
// load under GRPCLoadKey, and each call's ORCA load report in the
// trailer that grpc-go's orca package writes (endpoint-load-metrics-bin).
// A served call's first metadata is its header metadata. A failed call
// (a status and no message) is answered Trailers-Only, in one HEADERS
// frame ending the stream, as grpc-go's own HTTP/2 server answers it, so
// that a client's retry policy applies (grpc-go retries nothing else):
// all its metadata is trailer metadata. A client attributing answers
// reads the header metadata, else the trailer metadata.
const (
	// GRPCService is the service's full name.
	GRPCService = "lbchaos.v1.Backend"
	// GRPCMethodName is the unary method's name within GRPCService.
	GRPCMethodName = "Call"
	// GRPCMethod is the method's full path, as grpc.ClientConn.Invoke
	// takes it.
	GRPCMethod = "/" + GRPCService + "/" + GRPCMethodName
	// GRPCInstanceKey is the response metadata key naming the instance
	// (InstanceHeader, lower case as gRPC metadata is): header metadata,
	// or trailer metadata for a Trailers-Only failure.
	GRPCInstanceKey = "x-lbchaos-instance"
	// GRPCLoadKey is the response metadata key of the instance's load
	// (LoadHeader), beside GRPCInstanceKey.
	GRPCLoadKey = "x-lbchaos-load"
	// GRPCKeyKey is the request metadata key of a request's affinity key
	// (the HTTP requests' X-Lbchaos-Key), which grpc-go's ring_hash hashes
	// when configured with it as its request hash header.
	GRPCKeyKey = "x-lbchaos-key"
)

// ORCA fields of each call's load report (see loadReport): the instance's
// utilization as application_utilization, its answers and error answers
// per second as rps_fractional and eps, and the LoadHeader number as the
// named metric ORCAInFlightMetric.
const (
	// ORCATrailerKey is the metadata key of a per-call ORCA load report, a
	// binary xds.data.orca.v3.OrcaLoadReport.
	ORCATrailerKey = "endpoint-load-metrics-bin"
	// ORCAInFlightMetric names the load report's named metric holding the
	// other requests in the instance as it answers.
	ORCAInFlightMetric = "in_flight"
)

// grpcCodeNames are the gRPC status codes a failure may be answered with,
// by the names the gRPC spec gives them (doc/statuscodes.md), in code
// order from CANCELLED (1).
var grpcCodeNames = [...]string{
	"CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
	"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
	"UNAUTHENTICATED",
}

// ParseGRPCCode reads a gRPC status code by its spec name (e.g.
// "RESOURCE_EXHAUSTED"); "" is UNAVAILABLE. OK is refused: it is no
// failure.
func ParseGRPCCode(name string) (codes.Code, error) {
	if name == "" {
		return codes.Unavailable, nil
	}
	for i, n := range grpcCodeNames {
		if n == name {
			return codes.Code(i + 1), nil
		}
	}
	return codes.Unavailable, fmt.Errorf("unknown gRPC status code %q, want one of %s", name, strings.Join(grpcCodeNames[:], ", "))
}

// actionGRPCCode is Action.GRPCCode for a valid grpc_code parameter:
// codes.OK (the default, UNAVAILABLE) when it is "".
func actionGRPCCode(name string) codes.Code {
	if name == "" {
		return codes.OK
	}
	c, _ := ParseGRPCCode(name)
	return c
}
