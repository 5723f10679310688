// Package faultyserver is a fake service instance served over real HTTP: a
// worker pool with an explicit FIFO queue, a sampled service time, injectable
// faults, a control API and counters.
//
// Every response carries the instance id in [InstanceHeader]. Paths under
// [ControlPrefix] form the control API:
//
//	GET    /_chaos/fault   current fault as JSON, or null
//	PUT    /_chaos/fault   replace the fault (body: fault JSON); 400 {"error": "..."} on bad input
//	DELETE /_chaos/fault   clear the fault (204)
//	GET    /_chaos/stats   [Stats] as JSON
//	POST   /_chaos/reset   clear the fault, zero the counters, forget the executed requests (204)
//	GET    /_chaos/executed the X-Vegeta-Seq numbers of the requests executed since then ([Executed], binary)
//
// An instance with a token (Config.Token, `lbchaos serve --token` or
// LBCHAOS_TOKEN) answers every control request 401 unless it carries
// "Authorization: Bearer <token>"; a token in the query string is always
// refused (auth.go). /healthz needs no token.
//
// GET /healthz answers 200 "ok" unless the current fault's health_status says
// otherwise. Every other path is the service.
//
// One port speaks HTTP/1.1, h2c and gRPC: the unary method [GRPCMethod]
// (grpcwire.go) goes through the same queue, workers, faults and counters
// as an HTTP request, answers failures with gRPC status codes, and reports
// the instance's load in every answer, HTTP in [LoadHeader] and gRPC in a
// per-call ORCA load report from the same numbers (loadwindow.go).
//
// The fault model (the [Fault] interface and one file per mode) is declared
// here once and is meant to be interpreted by other backends as well: a fault
// only plans what happens to one request ([Fault.Plan]); the server carries
// the plan out. A [Sidecar] carries the same plans out in front of a real
// HTTP or gRPC service (`lbchaos serve --upstream`), reading them through
// [PlanProxy]: it forwards what the server would serve, scaling the
// upstream's own time where a fault scales the service time.
package faultyserver
