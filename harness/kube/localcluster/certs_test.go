package localcluster_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/harness/kube/localcluster"
)

func TestWritePKI(t *testing.T) {
	dir := t.TempDir()
	if err := localcluster.WritePKI(dir); err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	for _, tc := range []struct {
		name, cn, org string
		usage         x509.ExtKeyUsage
		dns           string
	}{
		{name: "apiserver", cn: "kube-apiserver", usage: x509.ExtKeyUsageServerAuth, dns: "localhost"},
		{name: "kubelet-serving", cn: "localhost", usage: x509.ExtKeyUsageServerAuth, dns: "localhost"},
		{name: "admin", cn: "lbchaos-admin", org: "system:masters", usage: x509.ExtKeyUsageClientAuth},
		{name: "kubelet", cn: "system:node:localhost", org: "system:nodes", usage: x509.ExtKeyUsageClientAuth},
		{name: "scheduler", cn: "system:kube-scheduler", usage: x509.ExtKeyUsageClientAuth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pair, err := tls.LoadX509KeyPair(filepath.Join(dir, tc.name+".crt"), filepath.Join(dir, tc.name+".key"))
			if err != nil {
				t.Fatalf("certificate and key do not pair: %v", err)
			}
			c, err := x509.ParseCertificate(pair.Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{tc.usage}, DNSName: tc.dns}); err != nil {
				t.Errorf("does not verify against the CA: %v", err)
			}
			if c.Subject.CommonName != tc.cn {
				t.Errorf("CN %q, want %q", c.Subject.CommonName, tc.cn)
			}
			if tc.org != "" && (len(c.Subject.Organization) != 1 || c.Subject.Organization[0] != tc.org) {
				t.Errorf("O %v, want %q", c.Subject.Organization, tc.org)
			}
		})
	}
	for _, f := range []string{"sa.key", "sa.pub"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if blk, _ := pem.Decode(b); blk == nil {
			t.Errorf("%s is not PEM", f)
		}
	}
	kc, err := localcluster.Kubeconfig("https://127.0.0.1:16443", dir, "admin")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"server: https://127.0.0.1:16443", "certificate-authority-data: ", "client-key-data: ", "current-context: lbchaos-kube"} {
		if !strings.Contains(kc, s) {
			t.Errorf("kubeconfig lacks %q", s)
		}
	}
}
