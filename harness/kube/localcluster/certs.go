package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// A certificate the cluster needs, signed by its CA.
type certSpec struct {
	name   string // file stem in the PKI dir
	cn     string
	orgs   []string
	server bool // serving certificate for localhost (else a client one)
}

// The cluster's identities. The admin and the apiserver's kubelet client
// are system:masters; the others are the identities the Node and RBAC
// authorizers know by name.
var certSpecs = []certSpec{
	{name: "apiserver", cn: "kube-apiserver", server: true},
	{name: "kubelet-serving", cn: "localhost", server: true},
	{name: "admin", cn: "lbchaos-admin", orgs: []string{"system:masters"}},
	{name: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}},
	{name: "controller-manager", cn: "system:kube-controller-manager"},
	{name: "scheduler", cn: "system:kube-scheduler"},
	{name: "kubelet", cn: "system:node:localhost", orgs: []string{"system:nodes"}},
	// system:kube-proxy is bound to system:node-proxier by RBAC's defaults.
	{name: "kube-proxy", cn: "system:kube-proxy"},
}

// WritePKI writes into dir a CA (ca.crt, ca.key), a certificate and key per
// identity (<name>.crt, <name>.key) and the service-account key pair
// (sa.key, sa.pub). Keys are ECDSA P-256, the service-account key RSA 2048,
// every certificate valid for a year.
func WritePKI(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "lbchaos-kube-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(1, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writeCertKey(dir, "ca", caDER, caKey); err != nil {
		return err
	}
	for _, s := range certSpecs {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial(),
			Subject:      pkix.Name{CommonName: s.cn, Organization: s.orgs},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.AddDate(1, 0, 0),
			KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if s.server {
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
			tmpl.DNSNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.ParseIP(serviceIP)}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return fmt.Errorf("certificate %s: %w", s.name, err)
		}
		if err := writeCertKey(dir, s.name, der, key); err != nil {
			return err
		}
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "sa.pub"), "PUBLIC KEY", pub); err != nil {
		return err
	}
	return writeKey(filepath.Join(dir, "sa.key"), saKey)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

func writeCertKey(dir, name string, der []byte, key crypto.Signer) error {
	if err := writePEM(filepath.Join(dir, name+".crt"), "CERTIFICATE", der); err != nil {
		return err
	}
	return writeKey(filepath.Join(dir, name+".key"), key)
}

func writeKey(path string, key crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", der)
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// Kubeconfig renders a kubeconfig for server that authenticates with the
// client certificate <user>.crt/.key of pkiDir, everything embedded, so the
// file works alone with client-go and kubectl.
func Kubeconfig(server, pkiDir, user string) (string, error) {
	read := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(pkiDir, name))
		return base64.StdEncoding.EncodeToString(b), err
	}
	ca, err := read("ca.crt")
	if err != nil {
		return "", err
	}
	crt, err := read(user + ".crt")
	if err != nil {
		return "", err
	}
	key, err := read(user + ".key")
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: lbchaos-kube
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: lbchaos-kube
  context:
    cluster: lbchaos-kube
    user: %s
current-context: lbchaos-kube
`, server, ca, user, crt, key, user), nil
}
