package kube

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/engine"
	"github.com/lbchaos/lbchaos/harness/live"
)

// A distributed run's generators on the cluster: each strategy's attack is
// one Indexed Job (completions = parallelism = N), whose pod of index K
// runs `lbchaos generate --generator K` from the backend image, the
// experiment file mounted from a ConfigMap. The coordinator reads each
// pod's stream from its log through the API server (pods/log, follow), so
// nothing is shared between the pods but the API. The pods share the
// backends' network mode: with NetworkHost they reach the instances on
// 127.0.0.1 like the coordinator does, with NetworkPod on their pod IPs.

// DefaultGeneratorLead is the time between creating a Job and its shared
// start: scheduling and starting N pods of an image the nodes have.
const DefaultGeneratorLead = 10 * time.Second

// Labels of the generators' objects.
const (
	labelGenerators = "io.lbchaos.generators" // the Job's name
	// jobIndexAnnotation is set by the Job controller on each pod of an
	// Indexed Job.
	jobIndexAnnotation = "batch.kubernetes.io/job-completion-index"
	// experimentDir is where a generator pod finds the experiment.
	experimentDir  = "/etc/lbchaos"
	experimentFile = "experiment.yaml"
	// generatorContainer names the generator pods' one container.
	generatorContainer = "generator"
)

// generatorReadyTimeout bounds the wait, beyond the lead, for a
// generator's pod to start running.
const generatorReadyTimeout = 60 * time.Second

// Launcher returns an engine.Launcher that runs a distributed run's
// generators as an Indexed Job in the run's namespace, lead (0 =
// DefaultGeneratorLead) before the shared start.
func (p *Provider) Launcher(lead time.Duration) engine.Launcher {
	if lead <= 0 {
		lead = DefaultGeneratorLead
	}
	return &jobLauncher{p: p, lead: lead, image: p.opts.Image, readyTimeout: generatorReadyTimeout}
}

type jobLauncher struct {
	p     *Provider
	lead  time.Duration
	image string // the generators' image: the backend image, lbchaos
	// readyTimeout bounds the wait, beyond the lead, for a pod to run.
	readyTimeout time.Duration
	seq          atomic.Int64

	batchOnce sync.Once
	batch     *api
	batchErr  error
}

func (l *jobLauncher) Name() string {
	return fmt.Sprintf("pods of an Indexed Job in namespace %s", l.p.ns)
}

func (l *jobLauncher) Lead() time.Duration { return l.lead }

// EndpointsListen implements live.EndpointsLauncher: in Service mode a
// generator pod of a client-side strategy serves its endpoints API on
// live.EndpointsPort, which the coordinator reaches through the API
// server (podGenerator.EndpointsAPI).
func (l *jobLauncher) EndpointsListen() string {
	if l.p.fwd == nil {
		return ""
	}
	return ":" + strconv.Itoa(live.EndpointsPort)
}

var (
	_ live.EndpointsLauncher = (*jobLauncher)(nil)
	_ live.EndpointsReach    = (*podGenerator)(nil)
)

// EndpointsAPI implements live.EndpointsReach: the generator's pod through
// the API server's port forwarding, once its pod is known.
func (g *podGenerator) EndpointsAPI() (*http.Client, string, string, error) {
	p := g.l.p
	pod, _ := g.podName.Load().(string)
	if p.fwd == nil || pod == "" {
		return nil, "", "", fmt.Errorf("generator %d: its pod is not running yet", g.index)
	}
	return p.fwd.client(faultyserver.DefaultClientTimeout), forwardURL(pod, live.EndpointsPort), p.opts.Token, nil
}

// batchClient is a client of the batch/v1 API (Jobs), made on first use.
func (l *jobLauncher) batchClient() (*api, error) {
	l.batchOnce.Do(func() { l.batch, l.batchErr = newBatchAPI(l.p.cfg) })
	return l.batch, l.batchErr
}

// Launch implements engine.Launcher: it creates the ConfigMap and the Job
// and returns one Generator per index at once; each finds its pod when its
// stream is first read. When ctx is done the Job and the ConfigMap are
// deleted: the Job's pods get SIGTERM, which interrupts a generator as
// Ctrl-C does (it ends its stream with what it measured), within their
// grace period of spec.Grace.
func (l *jobLauncher) Launch(ctx context.Context, spec engine.LaunchSpec) ([]engine.Generator, error) {
	batch, err := l.batchClient()
	if err != nil {
		return nil, fmt.Errorf("kube generators: %w", err)
	}
	p := l.p
	name := fmt.Sprintf("lbchaos-gen-%d", l.seq.Add(1))
	labels := map[string]string{LabelRun: p.runID, labelGenerators: name}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		BinaryData: map[string][]byte{experimentFile: spec.Experiment},
	}
	if err := p.cs.create(ctx, p.ns, "configmaps", cm, &corev1.ConfigMap{}); err != nil {
		return nil, fmt.Errorf("kube generators: create ConfigMap %s/%s: %w", p.ns, name, err)
	}
	job := generatorJob(p, l.image, name, labels, spec)
	if err := batch.create(ctx, p.ns, "jobs", job, &batchv1.Job{}); err != nil {
		l.remove(context.WithoutCancel(ctx), name)
		return nil, fmt.Errorf("kube generators: create Job %s/%s: %w", p.ns, name, err)
	}
	go func() {
		<-ctx.Done()
		l.remove(context.WithoutCancel(ctx), name)
	}()
	deadline := time.Now().Add(l.lead + l.readyTimeout)
	gens := make([]engine.Generator, spec.N)
	for g := range spec.N {
		gens[g] = &podGenerator{
			l: l, ctx: ctx, job: name, index: g, deadline: deadline,
			grace: spec.Grace,
			log:   engine.NewGeneratorLog(spec.Log, g),
		}
	}
	return gens, nil
}

// generatorJob is the Indexed Job of spec's generators.
func generatorJob(p *Provider, image, name string, labels map[string]string, spec engine.LaunchSpec) *batchv1.Job {
	n := int32(spec.N)
	indexed := batchv1.IndexedCompletion
	noRetry := int32(0)
	grace := int64(spec.Grace / time.Second)
	args := append([]string{"generate",
		// The Job controller sets JOB_COMPLETION_INDEX in each pod; the
		// kubelet expands $(VAR) in args.
		"--generator", "$(JOB_COMPLETION_INDEX)",
		"--experiment", experimentDir + "/" + experimentFile,
	}, spec.Args...)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: batchv1.JobSpec{
			CompletionMode: &indexed,
			Completions:    &n,
			Parallelism:    &n,
			// A generator's stream is its share of one measurement: a
			// second try would measure another schedule, so none.
			BackoffLimit: &noRetry,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					HostNetwork:                   p.network == NetworkHost,
					AutomountServiceAccountToken:  new(bool),
					EnableServiceLinks:            new(bool),
					TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{
						Name:            generatorContainer,
						Image:           image,
						ImagePullPolicy: p.opts.PullPolicy,
						Command:         []string{"/lbchaos"},
						Args:            args,
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: p.request},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "experiment", MountPath: experimentDir, ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "experiment", VolumeSource: corev1.VolumeSource{
						ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}},
					}}},
				},
			},
		},
	}
	if p.fwd != nil {
		// Service mode, pods on the pod network: the endpoints API
		// (live.EndpointsPort), guarded by the run's token, which the
		// coordinator pushes the instances' endpoints to. Not on the
		// host network, where a container port is a host port that two
		// generators on one node could not share.
		c := &job.Spec.Template.Spec.Containers[0]
		c.Env = tokenEnv()
		c.Ports = []corev1.ContainerPort{{Name: "endpoints", ContainerPort: live.EndpointsPort, Protocol: corev1.ProtocolTCP}}
	}
	return job
}

// remove deletes the Job name (its pods in the background, each with its
// grace period) and its ConfigMap; what is already gone is no error.
func (l *jobLauncher) remove(ctx context.Context, name string) {
	ctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	if batch, err := l.batchClient(); err == nil {
		bg := metav1.DeletePropagationBackground
		err := batch.delete(ctx, l.p.ns, "jobs", name, metav1.DeleteOptions{PropagationPolicy: &bg})
		if err != nil && !isNotFound(err) {
			fmt.Fprintf(l.p.opts.Log, "kube: warning: delete Job %s/%s: %v (the namespace's deletion removes it)\n", l.p.ns, name, err)
		}
	}
	if err := l.p.cs.delete(ctx, l.p.ns, "configmaps", name, metav1.DeleteOptions{}); err != nil && !isNotFound(err) {
		fmt.Fprintf(l.p.opts.Log, "kube: warning: delete ConfigMap %s/%s: %v (the namespace's deletion removes it)\n", l.p.ns, name, err)
	}
}

// podGenerator is the generator of one index of a Job: its pod, found when
// its stream is first read.
type podGenerator struct {
	l        *jobLauncher
	ctx      context.Context
	job      string
	index    int
	deadline time.Time // for its pod to run
	grace    time.Duration
	log      *engine.GeneratorLog

	once    sync.Once
	pod     string
	podName atomic.Value // pod, for EndpointsAPI: a string once known
	stream  io.Reader
	err     error
}

// Stream implements engine.Generator: the pod's log, its stream lines
// passed on and every other line (the generator's progress and errors, on
// its standard error) written to the run's log.
func (g *podGenerator) Stream() io.Reader { return readerFunc(g.read) }

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(b []byte) (int, error) { return f(b) }

func (g *podGenerator) read(b []byte) (int, error) {
	g.once.Do(func() {
		var pod *corev1.Pod
		if pod, g.err = g.waitRunning(); g.err != nil {
			return
		}
		g.pod = pod.Name
		g.podName.Store(pod.Name)
		// The log is followed past an interrupt, while the pod ends its
		// stream, but not for ever: a pod that has not ended its grace
		// period and half a minute after the interrupt (its node gone)
		// is cut off, and its stream reported incomplete.
		logCtx, cancel := context.WithCancel(context.WithoutCancel(g.ctx))
		var rc io.ReadCloser
		rc, g.err = g.l.p.cs.logs(logCtx, g.l.p.ns, pod.Name, &corev1.PodLogOptions{Container: generatorContainer, Follow: true})
		if g.err != nil {
			cancel()
			g.err = fmt.Errorf("log of pod %s: %w", pod.Name, g.err)
			return
		}
		done := make(chan struct{})
		g.stream = splitStream(rc, g.log, func() { close(done); cancel() })
		go func() {
			select {
			case <-done:
				return
			case <-g.ctx.Done():
			}
			select {
			case <-done:
			case <-time.After(g.grace + 30*time.Second):
				cancel()
			}
		}()
	})
	if g.err != nil {
		return 0, g.err
	}
	return g.stream.Read(b)
}

// waitRunning waits until the pod of g's index has started (running or
// already ended) and returns it. A pod that cannot start (its image
// missing on the node) or that is not running by the deadline is an error
// that quotes its status.
func (g *podGenerator) waitRunning() (*corev1.Pod, error) {
	p := g.l.p
	sel := metav1.ListOptions{LabelSelector: labelGenerators + "=" + g.job}
	var last *corev1.Pod
	for {
		pods, err := p.cs.listPods(g.ctx, p.ns, sel)
		if err == nil {
			for i := range pods.Items {
				pod := &pods.Items[i]
				if pod.Annotations[jobIndexAnnotation] != strconv.Itoa(g.index) {
					continue
				}
				last = pod
				switch pod.Status.Phase {
				case corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed:
					return pod, nil
				}
				if why := cannotStart(pod); why != "" {
					return nil, fmt.Errorf("pod %s cannot start: %s", pod.Name, why)
				}
			}
		}
		if g.ctx.Err() != nil {
			return nil, g.ctx.Err()
		}
		if time.Now().After(g.deadline) {
			if last == nil {
				return nil, fmt.Errorf("Job %s/%s created no pod of index %d (is the Job controller running?)", p.ns, g.job, g.index)
			}
			return nil, fmt.Errorf("pod %s not running by %s: %s", last.Name, g.deadline.Format("15:04:05"), podState(last))
		}
		select {
		case <-g.ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// cannotStart says why pod's generator cannot start, or "" while it may.
func cannotStart(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; fatalWaiting(w) {
			return w.Reason + ": " + w.Message
		}
	}
	return ""
}

// podState describes pod's phase and its containers' states.
func podState(pod *corev1.Pod) string {
	parts := []string{"phase " + string(pod.Status.Phase)}
	for _, c := range pod.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			parts = append(parts, fmt.Sprintf("%s: %s", c.Type, c.Message))
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			parts = append(parts, fmt.Sprintf("container %s waiting: %s %s", cs.Name, w.Reason, w.Message))
		}
	}
	return strings.Join(parts, "; ")
}

// Wait implements engine.Generator: once its stream was read to its end, a
// generator whose stream was complete succeeded unless its container
// exited non-zero; an incomplete stream is an error naming the pod, its
// exit and its last words.
func (g *podGenerator) Wait(rerr error) error {
	exit := g.exit()
	if rerr == nil && exit == "" {
		return nil
	}
	who := fmt.Sprintf("generator %d", g.index)
	if g.pod != "" {
		who += fmt.Sprintf(" (pod %s/%s)", g.l.p.ns, g.pod)
	}
	var why []string
	if exit != "" {
		why = append(why, exit)
	}
	if rerr != nil {
		why = append(why, fmt.Sprintf("its results: %v", rerr))
	}
	msg := who + ": " + strings.Join(why, "; ")
	if last := g.log.Last(); last != "" {
		msg += "; its last words: " + last
	}
	return errors.New(msg)
}

// exit waits, up to the pod's grace period, for its container to end and
// describes a non-zero exit ("" for a clean one, or when the pod is gone
// or never ran).
func (g *podGenerator) exit() string {
	if g.pod == "" {
		return ""
	}
	p := g.l.p
	ctx, cancel := context.WithTimeout(context.WithoutCancel(g.ctx), g.grace+10*time.Second)
	defer cancel()
	for {
		pod, err := p.cs.getPod(ctx, p.ns, g.pod)
		if isNotFound(err) {
			return ""
		}
		if err == nil {
			for _, cs := range pod.Status.ContainerStatuses {
				if t := cs.State.Terminated; cs.Name == generatorContainer && t != nil {
					if t.ExitCode == 0 {
						return ""
					}
					return fmt.Sprintf("exited with code %d (%s) %s", t.ExitCode, t.Reason, strings.TrimSpace(t.Message))
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Sprintf("its pod did not end within %v", g.grace+10*time.Second)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// splitStream returns the stream lines of a generator pod's log rc (those
// carrying engine.StreamPrefix) and writes every other line to log. The
// returned reader closes rc at its end, and then calls done.
func splitStream(rc io.ReadCloser, log io.Writer, done func()) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		defer done()
		defer rc.Close()
		sc := bufio.NewReaderSize(rc, 64<<10)
		for {
			line, err := sc.ReadSlice('\n')
			if err == bufio.ErrBufferFull {
				// Longer than any stream line: not one. Pass it on whole.
				rest, rerr := sc.ReadBytes('\n')
				line, err = append(append([]byte(nil), line...), rest...), rerr
			}
			if len(line) > 0 {
				if bytes.Contains(line, []byte(engine.StreamPrefix)) {
					if _, werr := pw.Write(line); werr != nil {
						_, _ = io.Copy(io.Discard, sc)
						return
					}
				} else {
					_, _ = log.Write(line)
				}
			}
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr
}
