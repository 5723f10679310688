package faultyserver

// SetHandlerHook makes s run hook, with the path, at the start of every
// HTTP request and gRPC call; set it before the first.
func SetHandlerHook(s *Server, hook func(path string)) { s.handlerHook = hook }
