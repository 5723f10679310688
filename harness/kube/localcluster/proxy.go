package localcluster

import (
	"fmt"
	"os/exec"
	"strings"
)

// Proxy modes of kube-proxy that this kernel can run. IPVS is not one:
// the kernel here has no ip_vs module.
const (
	ProxyIPTables = "iptables"
	ProxyNFTables = "nftables"
)

// DefaultProxyMode is kube-proxy's own default on Linux.
const DefaultProxyMode = ProxyIPTables

// CheckProxyMode reports why kube-proxy cannot run in mode here.
func CheckProxyMode(mode string) error {
	switch mode {
	case ProxyIPTables, ProxyNFTables:
		return nil
	case "ipvs":
		return fmt.Errorf("kube-proxy mode ipvs: this kernel has no IPVS (no ip_vs module); use %s or %s", ProxyIPTables, ProxyNFTables)
	}
	return fmt.Errorf("kube-proxy mode %q: want %s or %s", mode, ProxyIPTables, ProxyNFTables)
}

// KubeProxyConfig is kube-proxy's configuration file. It leaves the
// host's conntrack settings alone (maxPerCore, min and both TCP timeouts
// 0: "do not change"; kube-proxy would otherwise lower nf_conntrack_max
// and shorten the timeouts for the whole host) and, in iptables mode, does
// not set route_localnet (localhostNodePorts false): the cluster's Services
// are for pods, never for the host's loopback. Its health and metrics
// endpoints stay on loopback.
func KubeProxyConfig(l Layout, p Ports, mode string) string {
	return strings.TrimLeft(fmt.Sprintf(`
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: %s
hostnameOverride: localhost
clusterCIDR: %s
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:%d
metricsBindAddress: 127.0.0.1:%d
clientConnection:
  kubeconfig: %s
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
iptables:
  localhostNodePorts: false
  masqueradeAll: false
`, mode, PodSubnet, p.ProxyHealthz, p.ProxyMetrics, l.Kubeconfig("kube-proxy")), "\n")
}

// ProxySynced reports whether kube-proxy in mode has written the rules of
// the default/kubernetes Service: its first sync is done.
func ProxySynced(mode string) (bool, string) {
	var out []byte
	var err error
	if mode == ProxyNFTables {
		out, err = exec.Command("nft", "list", "table", "ip", "kube-proxy").CombinedOutput()
	} else {
		// A Service without endpoints (the API server's own, on
		// 127.0.0.1) is a REJECT in the filter table, not a nat rule.
		out, err = exec.Command("iptables-save").CombinedOutput()
	}
	if err != nil {
		return false, fmt.Sprintf("no rules yet: %s", strings.TrimSpace(string(out)))
	}
	if !strings.Contains(string(out), "default/kubernetes") {
		return false, "its rules do not have the default/kubernetes Service yet"
	}
	return true, ""
}

func kubeProxyArgs(l Layout) []string {
	return []string{"--config=" + l.KubeProxyConfig()}
}

// forwardRule is the FORWARD accept Up inserts for the pod bridge. Docker
// sets FORWARD's policy to DROP and turns on bridge-nf-call-iptables, so
// without it every packet between two pods on the bridge is dropped
// (kube-proxy's masqueradeAll would half-fix it and hide the clients'
// addresses). RestoreHostState removes it with the rest.
func forwardRule(op string) []string {
	return []string{op, "FORWARD", "-i", BridgeName, "-o", BridgeName, "-m", "comment", "--comment", "lbchaos-kube pod to pod", "-j", "ACCEPT"}
}

// acceptForward inserts forwardRule unless it is there.
func acceptForward() error {
	if exec.Command("iptables", forwardRule("-C")...).Run() == nil {
		return nil
	}
	args := forwardRule("-I")
	args = append(args[:2], append([]string{"1"}, args[2:]...)...)
	if out, err := exec.Command("iptables", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// ServiceRules reports whether kube-proxy's rules on this host (iptables
// or nftables, whichever mode it runs in) name Service namespace/name.
func ServiceRules(namespace, name string) (bool, string) {
	want := namespace + "/" + name
	if out, err := exec.Command("iptables-save", "-t", "nat").Output(); err == nil && strings.Contains(string(out), want) {
		return true, ""
	}
	if out, err := exec.Command("nft", "list", "table", "ip", "kube-proxy").Output(); err == nil && strings.Contains(string(out), want) {
		return true, ""
	}
	return false, "no iptables or nftables rule of kube-proxy names " + want
}
