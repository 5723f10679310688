package docker

import (
	"maps"
)

// serveTuning is the Go runtime's configuration in every server and
// sidecar container (lbchaos serve), which the in-process backends do not
// need: they share the harness's one runtime, whereas each container runs
// its own, mostly idle between requests, and pays alone for every wake-up.
// Measured with BenchmarkOverheadDockerCPU and perf(1) on one container
// under its share of the baseline load (docs/performance-log.md):
//
//   - GOMAXPROCS=1: a container sees every CPU of the host, so ten of them
//     on two cores would run twenty processors, and a goroutine made ready
//     also wakes an idle processor's thread to look for more work, which
//     it rarely finds. One processor is plenty for one instance's load.
//
//   - GODEBUG=schedtrace=2147483647 (milliseconds: a scheduler trace line
//     every 24.8 days, none before; a fatal runtime error also prints the
//     scheduler's state): the runtime's monitor thread (sysmon) then never
//     enters its deep sleep, which it does whenever every processor is
//     idle, i.e. between two requests, and from which the next system call
//     wakes it with its polling period reset to 20 µs, i.e. some fifty
//     wake-ups after every request: a third of a container's CPU. Kept
//     awake, it backs off to its 10 ms period and stays there.
//
// Options.Env overrides any of these.
var serveTuning = map[string]string{
	"GOMAXPROCS": "1",
	"GODEBUG":    "schedtrace=2147483647",
}

// ServeTuning returns a copy of the environment every server and sidecar
// container gets beside the token: serveTuning, for a benchmark that runs
// lbchaos serve as a process the way a container does.
func ServeTuning() map[string]string { return maps.Clone(serveTuning) }

// serveEnv is the environment of a server or sidecar container: the
// control token (tokenEnv), serveTuning and Options.Env, which wins.
func (p *Provider) serveEnv() map[string]string {
	env := p.tokenEnv()
	maps.Copy(env, serveTuning)
	maps.Copy(env, p.opts.Env)
	return env
}
