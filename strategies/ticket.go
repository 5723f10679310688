package strategies

// Ticket is a picked request that its caller ends itself, through
// Balancer.Finish, instead of through a done callback: PickTicket and
// Finish are Pick and its done without the callback's allocation, for a
// caller that ends every request exactly once (the simulator, which picks
// millions of requests a second). Its zero value is not a pick.
type Ticket struct {
	done     func(Outcome) // the Picker's own
	endpoint int
}

// Endpoint is the endpoint picked, or NoHost.
func (t Ticket) Endpoint() int { return t.endpoint }

// PickTicket is Pick returning a Ticket for Finish instead of a done
// callback, with the same effect on the Balancer and its Picker.
func (b *Balancer) PickTicket(req Request) Ticket {
	ep, _, inner := b.pick(req)
	return Ticket{done: inner, endpoint: ep}
}

// Finish ends the request t as Pick's done would with o. The caller must
// call it exactly once per Ticket: unlike done, a second call is not
// detected and would count the request out of flight twice.
func (b *Balancer) Finish(t Ticket, o Outcome) {
	b.end(t.endpoint, t.done, o)
}

// SetSerial promises that the Balancer is used from one goroutine only,
// never concurrently, as a simulation on one goroutine uses it: its picks
// and their ends (Pick, PickConn, PickTicket, done, Finish) then skip the
// Balancer's lock, which costs more than a simple Picker's pick. Call it
// before the first pick.
func (b *Balancer) SetSerial() { b.serial = true }
