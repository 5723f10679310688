package live

import (
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/transport"
)

// A request without an answer counts for the pod that answered over its
// connection; one whose connection nobody answered stays unnamed.
func TestAttributeByConn(t *testing.T) {
	coll := engine.NewCollector(3, time.Second, time.Second, time.Second)
	unnamed := []engine.SeqOutcome{
		{Seq: 1, Outcome: engine.Outcome{Instance: -1}},
		{Seq: 2, Outcome: engine.Outcome{Instance: -1}},
		{Seq: 3, Outcome: engine.Outcome{Instance: -1}},
	}
	conns := map[uint64]transport.ConnRef{1: {Port: 5000, ID: 7}, 2: {Port: 5001, ID: 8}}
	owner := map[uint64]int{7: 2}
	rest := attributeByConn(unnamed, conns, owner, coll)
	if len(rest) != 2 || rest[0].Seq != 2 || rest[1].Seq != 3 {
		t.Fatalf("left unnamed %+v, want requests 2 (its connection unanswered) and 3 (no connection)", rest)
	}
	coll.Finish()
	st := coll.Strategy("kube:service", nil)
	if st.Instances[2].Requests != 1 {
		t.Errorf("instance 2 got %d requests, want the one its connection answered", st.Instances[2].Requests)
	}
}
