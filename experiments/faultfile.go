package experiments

import (
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/lbchaos/lbchaos/faultyserver"
)

// fileFault is an entry of the file's fault schedule.
type fileFault struct {
	Instance  *int      `yaml:"instance"`
	Instances []int     `yaml:"instances"`
	Tier      string    `yaml:"tier"`
	Zone      string    `yaml:"zone"`
	Partition []string  `yaml:"partition"`
	At        string    `yaml:"at"`
	Until     string    `yaml:"until"`
	Fault     yaml.Node `yaml:"fault"`
}

// buildFaults converts the fault schedule in file order; an entry naming
// several instances becomes one Fault per instance, in the order listed.
func buildFaults(ffs []fileFault, e *Experiment) ([]Fault, error) {
	var faults []Fault
	for i, ff := range ffs {
		name := fmt.Sprintf("faults[%d]", i)
		var ids []int
		var from [][]string // by ids: the client zones the fault acts on
		given := 0
		for _, g := range []bool{ff.Instance != nil || ff.Instances != nil, ff.Tier != "", ff.Zone != "", ff.Partition != nil} {
			if g {
				given++
			}
		}
		switch {
		case given > 1:
			return nil, fieldErr(name, "give one of instance (or instances), tier, zone and partition")
		case ff.Zone != "" || ff.Partition != nil:
			var err error
			if ids, from, err = zoneFault(name, ff, e); err != nil {
				return nil, err
			}
		case ff.Tier != "":
			var err error
			if ids, err = tierFault(name, ff.Tier, e.Tiers); err != nil {
				return nil, err
			}
		case ff.Instance != nil && ff.Instances != nil:
			return nil, fieldErr(name, "give instance or instances, not both")
		case ff.Instance != nil:
			ids = []int{*ff.Instance}
		case len(ff.Instances) > 0:
			ids = ff.Instances
		default:
			return nil, fieldErr(name+".instance", "is required (or instances: [ids...], tier: NAME, zone: NAME or partition: [A, B])")
		}
		flt := Fault{}
		var err error
		if flt.At, err = duration(name+".at", ff.At, 0); err != nil {
			return nil, err
		}
		if flt.Until, err = duration(name+".until", ff.Until, 0); err != nil {
			return nil, err
		}
		switch {
		case ff.Fault.Kind == 0 && ff.Partition != nil:
			flt.Spec = faultyserver.Loss{P: 1} // every packet between the zones
		case ff.Fault.Kind == 0:
			return nil, fieldErr(name+".fault", "is required, e.g. {mode: fail, status: 503}")
		default:
			raw, err := nodeJSON(&ff.Fault)
			if err != nil {
				return nil, fieldErr(name+".fault", "%v", err)
			}
			if flt.Spec, err = faultyserver.ParseFault(raw); err != nil {
				return nil, fieldErr(name+".fault", "%v", err)
			}
		}
		for j, id := range ids {
			if slices.Contains(ids[:j], id) {
				return nil, fieldErr(name+".instances", "lists instance %d twice", id)
			}
			flt.Instance, flt.Origin, flt.From = id, name+".instance", nil
			if from != nil {
				flt.From = from[j]
			}
			switch {
			case ff.Zone != "":
				flt.Origin = fmt.Sprintf("%s.zone (instance %d)", name, id)
			case ff.Partition != nil:
				flt.Origin = fmt.Sprintf("%s.partition (instance %d)", name, id)
			case ff.Tier != "":
				flt.Origin = fmt.Sprintf("%s.tier (instance %d)", name, id)
			case ff.Instance == nil:
				flt.Origin = fmt.Sprintf("%s.instances[%d]", name, j)
			}
			faults = append(faults, flt)
		}
	}
	return faults, nil
}
