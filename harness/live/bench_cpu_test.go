package live

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/docker"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/process"
)

// BenchmarkOverheadDockerCPU compares the CPU per request of the backends
// in-process and in containers on the host's network, at baseline (10
// instances, fixed 10 ms, Poisson 4000 req/s, round robin): the CPU time
// of this process (harness and in-process backends), of the provider's
// containers (their cgroups) and of the engine (dockerd, containerd, the
// shims), per request sent. The whole machine's figure (/proc/stat) is
// reported beside it; it also counts whatever else the machine runs.
// docker-untuned is the same containers without the provider's runtime
// tuning (serveTuning in harness/docker), for the before and after. Each
// provider's fleet is started once and reused (Options.Reuse), so the
// figures are the cost of serving, not of starting containers. The
// providers run in turn, LBCHAOS_BENCH_ROUNDS times (default 3); medians
// are reported, with cpu-ratio, docker-host over in-process. Run it with
// -benchtime 1x; LBCHAOS_BENCH_DURATION sets each attack (default 10s).
func BenchmarkOverheadDockerCPU(b *testing.B) {
	runtest.Need(b, docker.Available(b.Context()))
	exp, d := benchBaseline(b)
	exp.Expect = nil // measured, not judged
	e, err := exp.Apply(experiments.Overrides{Duration: d, Strategies: []string{"round-robin"}})
	if err != nil {
		b.Fatal(err)
	}
	rounds := benchRounds()
	dp, err := docker.New(b.Context(), docker.Options{Binary: runtest.Binary(b), HostNetwork: true, Reuse: true})
	if err != nil {
		b.Fatal(err)
	}
	defer dp.Close(context.Background())
	untuned, err := docker.New(b.Context(), docker.Options{Binary: runtest.Binary(b), HostNetwork: true, Reuse: true, Env: map[string]string{"GOMAXPROCS": "", "GODEBUG": ""}})
	if err != nil {
		b.Fatal(err)
	}
	defer untuned.Close(context.Background())
	providers := []struct {
		name  string
		p     fleet.Provider
		runID string // the containers counted: this provider's
	}{
		{"process", process.Provider{}, ""},
		{"docker-host", dp, dp.RunID()},
		{"docker-untuned", untuned, untuned.RunID()},
	}
	// One short run each starts the fleets (and warms the caches).
	warm, err := exp.Apply(experiments.Overrides{Duration: time.Second, Strategies: []string{"round-robin"}})
	if err != nil {
		b.Fatal(err)
	}
	for _, pr := range providers {
		if _, err := run(b.Context(), warm, Options{Provider: pr.p}); err != nil {
			b.Fatalf("%s: %v", pr.name, err)
		}
	}
	perReq := make([][]float64, len(providers))     // harness + containers + engine
	machineReq := make([][]float64, len(providers)) // the whole machine
	var parts [][3]float64                          // docker-host: harness, containers, engine
	for range b.N {
		for r := range rounds {
			for i, pr := range providers {
				before := sampleCPU(b, pr.runID)
				sum, err := run(b.Context(), e, Options{Provider: pr.p})
				if err != nil {
					b.Fatalf("%s: %v", pr.name, err)
				}
				after := sampleCPU(b, pr.runID)
				n := float64(sum.Strategies[0].Requests)
				if n == 0 {
					b.Fatalf("%s: no requests", pr.name)
				}
				us := func(ns int64) float64 { return float64(ns) / 1e3 / n }
				machine := us(after.machine - before.machine)
				self, ctrs, engine := us(after.self-before.self), us(after.containers-before.containers), us(after.engine-before.engine)
				own := self + ctrs + engine
				perReq[i] = append(perReq[i], own)
				machineReq[i] = append(machineReq[i], machine)
				b.Logf("round %d %s: %.1f µs/req (harness %.1f, containers %.1f, engine %.1f; whole machine %.1f), %.0f req/s",
					r+1, pr.name, own, self, ctrs, engine, machine, sum.Strategies[0].AchievedRate)
				if pr.name == "docker-host" {
					parts = append(parts, [3]float64{self, ctrs, engine})
				}
			}
		}
	}
	proc, dock := median(perReq[0]), median(perReq[1])
	b.ReportMetric(proc, "process-us/req")
	b.ReportMetric(dock, "docker-host-us/req")
	b.ReportMetric(dock/proc, "cpu-ratio")
	b.ReportMetric(median(perReq[2]), "docker-untuned-us/req")
	b.ReportMetric(median(machineReq[0]), "process-machine-us/req")
	b.ReportMetric(median(machineReq[1]), "docker-host-machine-us/req")
	for k, name := range []string{"harness", "containers", "engine"} {
		col := make([]float64, len(parts))
		for j, p := range parts {
			col[j] = p[k]
		}
		b.ReportMetric(median(col), "docker-"+name+"-us/req")
	}
}

// cpuSample is CPU time used so far, in nanoseconds: by the whole machine
// (busy, from /proc/stat), by this process, by the Docker containers
// (their cpuacct cgroups) and by the engine's processes (dockerd,
// containerd, containerd-shim).
type cpuSample struct {
	machine, self, containers, engine int64
}

// clockTick is USER_HZ, the unit of /proc's CPU times, on every Linux
// architecture Go supports.
const clockTick = int64(time.Second / 100)

// sampleCPU samples the CPU times; the containers counted are those of
// run runID (none when "").
func sampleCPU(b *testing.B, runID string) cpuSample {
	busy, _ := machineCPU(b)
	s := cpuSample{machine: int64(busy) * clockTick}
	s.self = procCPU("self")
	if runID != "" {
		out, err := exec.Command("docker", "ps", "-q", "--no-trunc", "--filter", "label="+docker.LabelRun+"="+runID).Output()
		if err != nil {
			b.Fatalf("docker ps: %v", err)
		}
		s.containers = containersCPU(strings.Fields(string(out)))
	}
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		if _, err := strconv.Atoi(ent.Name()); err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "comm"))
		if err != nil {
			continue
		}
		switch c := strings.TrimSpace(string(comm)); {
		case c == "dockerd", c == "containerd", strings.HasPrefix(c, "containerd-shim"):
			s.engine += procCPU(ent.Name())
		}
	}
	return s
}

// procCPU returns the user and system CPU time of process pid ("self" for
// this one), threads and waited-for children included, or 0.
func procCPU(pid string) int64 {
	data, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return 0
	}
	// The command name may hold spaces; the fields follow its ')'.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	var t int64
	for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime (fields 14-17)
		if i < len(f) {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			t += v
		}
	}
	return t * clockTick
}

// containersCPU returns the CPU time of the Docker containers ids, from
// their cgroups: cgroup v1's cpuacct.usage (ns) or cgroup v2's cpu.stat
// usage_usec, under the cgroupfs or the systemd driver's layout.
func containersCPU(ids []string) int64 {
	var t int64
	for _, id := range ids {
		if data, err := os.ReadFile("/sys/fs/cgroup/cpuacct/docker/" + id + "/cpuacct.usage"); err == nil {
			v, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
			t += v
			continue
		}
		for _, p := range []string{"/sys/fs/cgroup/system.slice/docker-" + id + ".scope/cpu.stat", "/sys/fs/cgroup/docker/" + id + "/cpu.stat"} {
			data, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			for line := range strings.Lines(string(data)) {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "usage_usec "); ok {
					n, _ := strconv.ParseInt(v, 10, 64)
					t += n * 1e3
				}
			}
		}
	}
	return t
}
