package engine

import (
	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/reports"
)

// zoneAgg is what a collector with zones keeps: by client zone, its
// requests and their latency, and where they went.
type zoneAgg struct {
	names     []string
	instances [][]int   // by zone: its instances' ids
	clients   []float64 // by zone: its configured share of the clients
	of        []int32   // by instance: its zone
	requests  []int64   // by client zone
	successes []int64   // by client zone
	hists     []*hdrhistogram.Histogram
	// routed[cz][iz] counts the requests of client zone cz that zone iz's
	// instances answered (or gave no answer to).
	routed [][]int64
}

// SetZones makes the collector count every request by the zone of its
// client (Outcome.ClientZone) and of the instance it went to, for the
// summary's zones and cross_zone_share. Call it before the first Add; it
// does nothing for an experiment without zones.
func (c *Collector) SetZones(exp *experiments.Experiment) {
	if len(exp.Zones) == 0 {
		return
	}
	n := len(exp.Zones)
	z := &zoneAgg{
		names:     exp.ZoneNames(),
		instances: make([][]int, n),
		clients:   make([]float64, n),
		of:        make([]int32, c.instances),
		requests:  make([]int64, n),
		successes: make([]int64, n),
		hists:     make([]*hdrhistogram.Histogram, n),
		routed:    make([][]int64, n),
	}
	for i, zn := range exp.Zones {
		z.clients[i] = zn.Clients
		z.hists[i] = newHist()
		z.routed[i] = make([]int64, n)
	}
	for id := range z.of {
		z.of[id] = int32(exp.ZoneOf(id))
		if z.of[id] >= 0 {
			z.instances[z.of[id]] = append(z.instances[z.of[id]], id)
		}
	}
	c.zones = z
}

// add counts n requests of outcome o, latency us. c.mu held.
func (z *zoneAgg) add(o *Outcome, us, n int64) {
	cz := int(o.ClientZone)
	if cz < 0 || cz >= len(z.names) {
		return
	}
	z.requests[cz] += n
	if o.Success {
		z.successes[cz] += n
	}
	_ = z.hists[cz].RecordValues(us, n)
	if o.Instance >= 0 && o.Instance < len(z.of) {
		if iz := z.of[o.Instance]; iz >= 0 {
			z.routed[cz][iz] += n
		}
	}
}

// fill sets s's zones and cross-zone share; inst are the instances'
// totals, whose requests count what each zone's instances received.
func (z *zoneAgg) fill(s *reports.Strategy, inst []instAgg, attempts int64) {
	var routed, cross int64
	for cz := range z.names {
		for iz, k := range z.routed[cz] {
			routed += k
			if iz != cz {
				cross += k
			}
		}
	}
	s.CrossZoneShare = new(ratio(cross, routed))
	for i, name := range z.names {
		zs := reports.ZoneStats{
			Name:         name,
			Instances:    z.instances[i],
			ClientsShare: z.clients[i],
			Requests:     z.requests[i],
			ErrorRatio:   ratio(z.requests[i]-z.successes[i], z.requests[i]),
			LatencyMs:    latencyPtr(z.hists[i]),
		}
		if zs.Instances == nil {
			zs.Instances = []int{}
		}
		var mine int64
		for _, k := range z.routed[i] {
			mine += k
		}
		zs.LocalShare = ratio(z.routed[i][i], mine)
		for _, id := range z.instances[i] {
			zs.Received += inst[id].requests
		}
		zs.ReceivedShare = ratio(zs.Received, attempts)
		s.Zones = append(s.Zones, zs)
	}
}
