package faultyserver

import "net/http"

// Protocols returns what an instance speaks on its one port (see
// serveProtocols), for a server that runs an instance's handler itself,
// such as the harness's in-process backends.
func Protocols() *http.Protocols { return serveProtocols() }
