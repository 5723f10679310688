package faultyserver

// The gRPC face of an instance. Beside HTTP/1.1 and h2c, every instance
// (fake server or sidecar) serves one unary method on the same port: the
// load generator's gRPC call. Its messages are protobuf well-known types,
// so neither side needs generated code:
//
//	request:  google.protobuf.StringValue — the request's path (informational)
//	response: google.protobuf.BytesValue — the body the HTTP answer would carry
//
// The instance id rides in the response's header metadata under
// GRPCInstanceKey (also on failures, as HTTP's InstanceHeader does), the
// load under GRPCLoadKey, and each call's ORCA load report in the
// trailer that grpc-go's orca package writes (endpoint-load-metrics-bin).
const (
	// GRPCService is the service's full name.
	GRPCService = "lbchaos.v1.Backend"
	// GRPCMethodName is the unary method's name within GRPCService.
	GRPCMethodName = "Call"
	// GRPCMethod is the method's full path, as grpc.ClientConn.Invoke
	// takes it.
	GRPCMethod = "/" + GRPCService + "/" + GRPCMethodName
	// GRPCInstanceKey is the response header metadata key naming the
	// instance (InstanceHeader, lower case as gRPC metadata is).
	GRPCInstanceKey = "x-lbchaos-instance"
	// GRPCLoadKey is the response header metadata key of the instance's
	// load (LoadHeader).
	GRPCLoadKey = "x-lbchaos-load"
	// GRPCKeyKey is the request metadata key of a request's affinity key
	// (the HTTP requests' X-Lbchaos-Key), which grpc-go's ring_hash hashes
	// when configured with it as its request hash header.
	GRPCKeyKey = "x-lbchaos-key"
)
