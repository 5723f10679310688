package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/docker"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/kube"
	"github.com/lbchaos/lbchaos/harness/kube/localcluster"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// kubeFlags are the flags of --backends kube.
type kubeFlags struct {
	kubeconfig string
	image      string
	load       bool
	network    string
	cpuRequest string
	// generators runs a distributed run's generators as an Indexed Job
	// (false: local processes); lead is their start's lead.
	generators bool
	lead       time.Duration
	// token is the run's control token (--token), not a flag of its own.
	token string
}

func (k *kubeFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "--backends kube: the cluster's kubeconfig (default: $KUBECONFIG, then ~/.kube/config, then the in-cluster account)")
	fs.StringVar(&k.image, "kube-image", "", "--backends kube: the backend image the pods run, which the cluster's nodes must have or pull (default: the image lbchaos builds with Docker from itself, lbchaos-backend:<hash>, run with imagePullPolicy Never: load it into the cluster first, or give --kube-load)")
	fs.BoolVar(&k.load, "kube-load", false, "--backends kube: import the backend image into the local cluster of make kube-up (its containerd) before the run; automatic when the image is built here and the kubeconfig names that cluster while it runs")
	fs.StringVar(&k.network, "kube-network", "auto", "--backends kube: how lbchaos reaches the pods: host (hostNetwork pods, each on its own 127.0.0.1 port; a cluster on this machine), pod (pod IPs, port 8080; lbchaos runs inside the cluster or on a node), or auto (host when the API server is on a loopback address)")
	fs.StringVar(&k.cpuRequest, "kube-cpu-request", kube.DefaultCPURequest, "--backends kube: each pod's CPU request (a hundred pods of 10m fit on two CPUs)")
	fs.BoolVar(&k.generators, "kube-generators", true, "--backends kube with generators > 1: run the generators as the pods of an Indexed Job in the run's namespace, their results read from the pods' logs (false: as processes of this machine)")
	fs.DurationVar(&k.lead, "kube-generator-lead", kube.DefaultGeneratorLead, "--backends kube with generators > 1: the time between creating the generators' Job and their shared start (scheduling and starting the pods)")
}

// check validates the flags against --backends before anything starts.
func (k kubeFlags) check(backends string) error {
	switch kube.Network(k.network) {
	case kube.NetworkAuto, kube.NetworkHost, kube.NetworkPod:
	default:
		return fmt.Errorf("--kube-network: unknown value %q (auto, host or pod)", k.network)
	}
	if q, err := resource.ParseQuantity(k.cpuRequest); err != nil || q.Sign() <= 0 {
		return fmt.Errorf("--kube-cpu-request: %q is no positive CPU quantity (e.g. 10m or 0.1)", k.cpuRequest)
	}
	if backends == "kube" {
		return nil
	}
	if k.lead <= 0 {
		return fmt.Errorf("--kube-generator-lead: must be positive, got %v", k.lead)
	}
	set := k.kubeconfig != "" || k.image != "" || k.load || k.network != "auto" || k.cpuRequest != kube.DefaultCPURequest ||
		!k.generators || k.lead != kube.DefaultGeneratorLead
	if set {
		return fmt.Errorf("--kubeconfig and --kube-* act on kube backends; give --backends kube too (got --backends %s)", backends)
	}
	return nil
}

// provider starts the kube provider for exp: it resolves the image
// (building the backend image with Docker unless --kube-image names one),
// imports it into the local cluster with --kube-load, and gives the pods a
// shared process namespace when a fault pauses one.
func (k kubeFlags) provider(ctx context.Context, exp *experiments.Experiment, logw io.Writer) (*kube.Provider, error) {
	opts := kube.Options{
		Kubeconfig: k.kubeconfig,
		Image:      k.image,
		Network:    kube.Network(k.network),
		CPURequest: k.cpuRequest,
		Reuse:      true,
		Log:        logw,
		Token:      k.token,
	}
	for _, f := range exp.Faults {
		if f.Spec.Mode() == (faultyserver.Pause{}).Mode() {
			opts.SharePIDs = true
		}
	}
	if serviceRun(exp) {
		opts.Service = true
		if namesLocalCluster(k.kubeconfig) {
			opts.ServiceRules = localcluster.ServiceRules
		}
	}
	// Before any image work: a cluster that does not answer says so first.
	if err := kube.Available(ctx, k.kubeconfig); err != nil {
		return nil, err
	}
	if opts.Image == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("locating the lbchaos binary: %w", err)
		}
		if opts.Image, err = docker.BuildImage(ctx, exe, logw); err != nil {
			return nil, fmt.Errorf("the backend image is built with Docker (or give --kube-image): %w", err)
		}
		// Built here, so no registry has it: the node must have been given it.
		opts.PullPolicy = corev1.PullNever
		if !k.load && namesLocalCluster(k.kubeconfig) {
			// The running cluster of make kube-up: give it the image.
			k.load = true
		}
		if !k.load {
			fmt.Fprintf(logw, "lbchaos: the pods run image %s, which the cluster's nodes must have (make kube-load IMAGES=%s, or --kube-load, for the local cluster)\n", opts.Image, opts.Image)
		}
	}
	if k.load {
		if err := loadLocal(ctx, opts.Image, logw); err != nil {
			return nil, err
		}
	}
	return kube.New(ctx, opts)
}

// launcher returns the launcher of exp's generators on p's cluster, nil
// for a run of one generator or with --kube-generators=false (local
// processes).
func (k kubeFlags) launcher(p *kube.Provider, exp *experiments.Experiment) (engine.Launcher, error) {
	if serviceRun(exp) {
		// Pods on the pod network: only pods send them load, even one
		// generator's.
		if !k.generators {
			return nil, errors.New("--kube-generators=false: the instances are pods behind a Service, which only generator pods send load to (this machine's own network sends none to a pod); leave it out")
		}
		for _, name := range exp.Strategies {
			if proxyspec.IsProxy(name) && !proxyspec.IsService(name) {
				return nil, fmt.Errorf("strategy %s: its proxy runs on this machine, which does not send load to the pods of a Service run; list it in an experiment without kube:service", name)
			}
		}
		return p.Launcher(k.lead), nil
	}
	if exp.Generators <= 1 || !k.generators {
		return nil, nil
	}
	if p.Network() != kube.NetworkHost {
		for _, name := range exp.Strategies {
			if proxyspec.IsProxy(name) {
				return nil, fmt.Errorf("--generators %d with strategy %s: its proxy runs on this machine, which generator pods on pod IPs cannot reach; use --kube-network host, or --kube-generators=false", exp.Generators, name)
			}
		}
	}
	return p.Launcher(k.lead), nil
}

// localLayout is the layout of the local cluster of make kube-up.
func localLayout() localcluster.Layout {
	v := localcluster.DefaultVersion
	return localcluster.Layout{Version: v, CacheDir: localcluster.DefaultCacheDir(v), StateDir: localcluster.DefaultStateDir}
}

// namesLocalCluster reports whether kubeconfig names the running local
// cluster of make kube-up: it has a record, and its admin kubeconfig
// names the same API server.
func namesLocalCluster(kubeconfig string) bool {
	l := localLayout()
	if _, err := os.Stat(l.RecordFile()); err != nil {
		return false
	}
	local, err := kube.Server(l.Kubeconfig("admin"))
	if err != nil {
		return false
	}
	mine, err := kube.Server(kubeconfig)
	return err == nil && mine == local
}

// loadLocal imports image into the local cluster of make kube-up.
func loadLocal(ctx context.Context, image string, logw io.Writer) error {
	err := localcluster.Load(ctx, localcluster.Options{
		Layout: localLayout(),
		Images: []string{image},
		Log:    logw,
	})
	if err != nil {
		return fmt.Errorf("--kube-load: importing %s into the local cluster: %w", image, err)
	}
	return nil
}

// kubeCloser deletes the run's namespace, with a fresh context: the run's
// own may be cancelled by Ctrl-C.
func kubeCloser(p *kube.Provider, logw io.Writer) func() {
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			fmt.Fprintf(logw, "lbchaos: removing namespace %s: %v\n", p.Namespace(), err)
		}
	}
}

// cleanKube deletes every lbchaos namespace of the cluster kubeconfig
// names; reached is false when no cluster answered.
func cleanKube(ctx context.Context, kubeconfig string, stdout, stderr io.Writer) (reached bool, err error) {
	if err := kube.Available(ctx, kubeconfig); err != nil {
		if errors.Is(err, kube.ErrNoCluster) {
			fmt.Fprintf(stderr, "lbchaos clean: Kubernetes: nothing to do: %v\n", err)
			return false, nil
		}
		return false, err
	}
	n, err := kube.SweepAll(ctx, kubeconfig, stderr)
	if err != nil {
		return true, err
	}
	fmt.Fprintf(stdout, "deleted %d namespaces\n", n)
	return true, nil
}

// serviceRun reports whether exp's kube instances run behind a Service: a
// strategy is kube:service, or instances.kube.service says so.
func serviceRun(exp *experiments.Experiment) bool {
	return exp.Instances.Kube.Service || exp.Instances.Kube.Workload == experiments.WorkloadDeployment ||
		slices.ContainsFunc(exp.Strategies, proxyspec.IsService)
}
