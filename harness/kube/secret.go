package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lbchaos/lbchaos/faultyserver"
)

// The run's control token lives in a Secret of its namespace, which every
// server and sidecar container reads into its environment (TokenEnv)
// through a secretKeyRef: the pod spec, readable by whoever may list pods,
// holds its name and key, never the token.
const (
	// ControlSecret is the name of the Secret holding the token.
	ControlSecret = "lbchaos-control"
	// ControlSecretKey is the token's key in it.
	ControlSecretKey = "token"
)

// controlSecret is the Secret of the run's control token.
func (p *Provider) controlSecret() *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ControlSecret,
			Namespace: p.ns,
			Labels:    map[string]string{LabelRun: p.runID},
		},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{ControlSecretKey: p.opts.Token},
	}
}

// createControlSecret creates the Secret in the run's namespace, which
// deletes it with everything else.
func (p *Provider) createControlSecret(ctx context.Context) error {
	if err := p.cs.create(ctx, p.ns, "secrets", p.controlSecret(), &corev1.Secret{}); err != nil {
		return fmt.Errorf("kube backends: create secret %s/%s (the control token): %w", p.ns, ControlSecret, err)
	}
	return nil
}

// tokenEnv is the environment of a server or sidecar container: TokenEnv
// from the Secret.
func tokenEnv() []corev1.EnvVar {
	return []corev1.EnvVar{{
		Name: faultyserver.TokenEnv,
		ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: ControlSecret},
			Key:                  ControlSecretKey,
		}},
	}}
}
