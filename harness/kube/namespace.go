package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/lbchaos/lbchaos/harness/internal/owner"
)

// NamespacePrefix starts the name of every namespace a run creates.
const NamespacePrefix = "lbchaos-"

// zeroGrace deletes at once: the kubelet then stops the containers with
// its shortest grace period.
var zeroGrace = metav1.DeleteOptions{GracePeriodSeconds: new(int64)}

// backgroundDelete deletes an object at once and leaves its dependents
// (a Deployment's ReplicaSets, their pods) to the garbage collector.
var backgroundDelete = metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// ownerLabelValue is owner as a label value ('/' → '_'), or "" when it is
// not a valid one (a long host name).
func ownerLabelValue(owner string) string {
	v := strings.ReplaceAll(owner, "/", "_")
	if len(validation.IsValidLabelValue(v)) > 0 {
		return ""
	}
	return v
}

// namespaceFor is the namespace of run runID created by owner.
func namespaceFor(runID, owner string) *corev1.Namespace {
	labels := map[string]string{LabelRun: runID}
	if v := ownerLabelValue(owner); v != "" {
		labels[LabelOwner] = v
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:        NamespacePrefix + runID,
		Labels:      labels,
		Annotations: map[string]string{AnnotationOwner: owner},
	}}
}

func (p *Provider) createNamespace(ctx context.Context) error {
	if err := p.cs.create(ctx, "", "namespaces", namespaceFor(p.runID, p.owner), &corev1.Namespace{}); err != nil {
		return fmt.Errorf("kube backends: create namespace %s on %s: %w", p.ns, p.host, err)
	}
	return nil
}

// deleteNamespace deletes ns's pods at once (grace period 0; a namespace's
// own deletion would give each its full grace period) and then ns. A
// namespace already gone is no error.
func deleteNamespace(ctx context.Context, cs *api, ns string) error {
	err := cs.deleteCollection(ctx, ns, "pods", zeroGrace, metav1.ListOptions{})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("delete pods: %w", err)
	}
	bg := metav1.DeletePropagationBackground
	err = cs.delete(ctx, "", "namespaces", ns, metav1.DeleteOptions{PropagationPolicy: &bg})
	if err != nil && !isNotFound(err) {
		return err
	}
	return nil
}

// waitNamespaceGone polls until ns no longer exists, for up to timeout.
func waitNamespaceGone(ctx context.Context, cs *api, ns string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		n, err := cs.getNamespace(ctx, ns)
		switch {
		case isNotFound(err):
			return nil
		case err != nil && ctx.Err() == nil:
			// A transient failure: ask again.
		case ctx.Err() != nil:
			phase := corev1.NamespacePhase("unknown")
			if n != nil {
				phase = n.Status.Phase
			}
			return fmt.Errorf("namespace %s still exists (%s) after %v: it goes once the cluster's namespace controller has removed its pods", ns, phase, timeout)
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// SweepStale deletes the namespaces labelled LabelRun whose owner names a
// process of this host that is gone (a run that was killed), and returns
// how many it deleted. It never touches a namespace without LabelRun.
func SweepStale(ctx context.Context, kubeconfig string, log io.Writer) (int, error) {
	return sweepWith(ctx, kubeconfig, log, staleOnly)
}

// SweepAll deletes every namespace labelled LabelRun, whoever created it,
// and returns how many it deleted (`lbchaos clean`).
func SweepAll(ctx context.Context, kubeconfig string, log io.Writer) (int, error) {
	return sweepWith(ctx, kubeconfig, log, allRuns)
}

type sweepScope int

const (
	staleOnly sweepScope = iota
	allRuns
)

func sweepWith(ctx context.Context, kubeconfig string, log io.Writer, scope sweepScope) (int, error) {
	if log == nil {
		log = io.Discard
	}
	cs, _, err := connect(ctx, Options{Kubeconfig: kubeconfig})
	if err != nil {
		return 0, err
	}
	return sweep(ctx, cs, log, scope)
}

// sweep deletes the lbchaos namespaces in scope. It does not wait for them
// to go; one already being deleted is not counted.
func sweep(ctx context.Context, cs *api, log io.Writer, scope sweepScope) (int, error) {
	host, err := os.Hostname()
	if err != nil {
		return 0, fmt.Errorf("sweep: %w", err)
	}
	var list corev1.NamespaceList
	err = cs.list(ctx, "", "namespaces", metav1.ListOptions{LabelSelector: LabelRun}, &list)
	if err != nil {
		return 0, fmt.Errorf("list namespaces: %w", err)
	}
	var errs []error
	n := 0
	for _, ns := range list.Items {
		who := ns.Annotations[AnnotationOwner]
		if scope == staleOnly && !owner.Gone(who, host) {
			continue
		}
		if err := deleteNamespace(ctx, cs, ns.Name); err != nil {
			errs = append(errs, fmt.Errorf("delete namespace %s: %w", ns.Name, err))
			continue
		}
		if ns.DeletionTimestamp == nil {
			n++
			fmt.Fprintf(log, "kube: deleted namespace %s (run %s, owner %s)\n", ns.Name, ns.Labels[LabelRun], who)
		}
	}
	return n, errors.Join(errs...)
}
