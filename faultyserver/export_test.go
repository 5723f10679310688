package faultyserver

import "net/http"

// SetHandlerHook makes s run hook at the start of every request; set it
// before the first.
func SetHandlerHook(s *Server, hook func(*http.Request)) { s.handlerHook = hook }
