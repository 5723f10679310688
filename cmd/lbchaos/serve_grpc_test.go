package main

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/faultyserver"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// serve speaks gRPC on its port, with --fault's grpc_code; serve
// --upstream --grpc-upstream forwards gRPC calls to the gRPC upstream.
func TestServeGRPC(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := func(args ...string) (addr string, done chan error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr = ln.Addr().String()
		ln.Close()
		done = make(chan error, 1)
		go func() {
			var o, e bytes.Buffer
			done <- run(ctx, append([]string{"serve", "--listen", addr}, args...), &o, &e)
		}()
		ctl := &faultyserver.Client{BaseURL: "http://" + addr}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err := ctl.Fault(ctx); err == nil {
				return addr, done
			}
			if time.Now().After(deadline) {
				t.Fatalf("serve %v did not come up", args)
			}
		}
	}
	call := func(addr string) (string, error) {
		cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		var hdr, trl metadata.MD
		err = cc.Invoke(ctx, faultyserver.GRPCMethod, wrapperspb.String("/"), new(wrapperspb.BytesValue), grpc.Header(&hdr), grpc.Trailer(&trl))
		id := ""
		if v := hdr.Get(faultyserver.GRPCInstanceKey); len(v) == 1 {
			id = v[0]
		} else if v := trl.Get(faultyserver.GRPCInstanceKey); len(v) == 1 { // a failure, Trailers-Only
			id = v[0]
		}
		return id, err
	}

	backend, backendDone := start("--id", "1", "--service", "fixed:1ms",
		"--fault", `{"mode":"fail","status":429,"grpc_code":"RESOURCE_EXHAUSTED"}`)
	if id, err := call(backend); status.Code(err) != codes.ResourceExhausted || id != "1" {
		t.Errorf("serve with a fail fault: %v from %q, want ResourceExhausted from 1", err, id)
	}
	if err := (&faultyserver.Client{BaseURL: "http://" + backend}).ClearFault(ctx); err != nil {
		t.Fatal(err)
	}
	sidecar, sidecarDone := start("--id", "2", "--upstream", "http://127.0.0.1:1", "--grpc-upstream", "http://"+backend)
	if id, err := call(sidecar); err != nil || id != "2" {
		t.Errorf("serve --grpc-upstream: %v from %q, want an answer from the sidecar, 2", err, id)
	}
	cancel()
	for _, done := range []chan error{backendDone, sidecarDone} {
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve returned %v after cancel", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("serve did not stop")
		}
	}
}
