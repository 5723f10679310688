package localcluster

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestKubeProxyConfigLeavesTheHostAlone(t *testing.T) {
	for _, mode := range []string{ProxyIPTables, ProxyNFTables} {
		var c struct {
			Kind               string
			Mode               string
			BindAddress        string `yaml:"bindAddress"`
			HealthzBindAddress string `yaml:"healthzBindAddress"`
			ClusterCIDR        string `yaml:"clusterCIDR"`
			Conntrack          map[string]any
			IPTables           map[string]any              `yaml:"iptables"`
			ClientConnection   struct{ Kubeconfig string } `yaml:"clientConnection"`
		}
		if err := yaml.Unmarshal([]byte(KubeProxyConfig(testLayout, DefaultPorts, mode)), &c); err != nil {
			t.Fatal(err)
		}
		if c.Kind != "KubeProxyConfiguration" || c.Mode != mode || c.ClusterCIDR != PodSubnet {
			t.Errorf("%s: kind %q mode %q clusterCIDR %q", mode, c.Kind, c.Mode, c.ClusterCIDR)
		}
		// Zero means "do not touch" for each of these host-wide settings.
		for k, want := range map[string]any{"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"} {
			if c.Conntrack[k] != want {
				t.Errorf("%s: conntrack.%s = %v, want %v", mode, k, c.Conntrack[k], want)
			}
		}
		if c.IPTables["localhostNodePorts"] != false {
			t.Errorf("%s: iptables.localhostNodePorts = %v, want false (it would set route_localnet)", mode, c.IPTables["localhostNodePorts"])
		}
		if !strings.HasPrefix(c.HealthzBindAddress, "127.0.0.1:") || c.BindAddress != "127.0.0.1" {
			t.Errorf("%s: health %q bind %q: want loopback", mode, c.HealthzBindAddress, c.BindAddress)
		}
		if c.ClientConnection.Kubeconfig != testLayout.Kubeconfig("kube-proxy") {
			t.Errorf("%s: kubeconfig %q", mode, c.ClientConnection.Kubeconfig)
		}
	}
}

func TestCheckProxyMode(t *testing.T) {
	for _, ok := range []string{"iptables", "nftables"} {
		if err := CheckProxyMode(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for mode, want := range map[string]string{"ipvs": "no IPVS", "userspace": `"userspace": want iptables or nftables`} {
		if err := CheckProxyMode(mode); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it to say %q", mode, err, want)
		}
	}
}

func TestSysctlsCoverKubeProxy(t *testing.T) {
	for _, k := range []string{"net.netfilter.nf_conntrack_max", "net.netfilter.nf_conntrack_tcp_timeout_established", "net.netfilter.nf_conntrack_tcp_timeout_close_wait", "net.ipv4.conf.all.route_localnet"} {
		found := false
		for _, s := range Sysctls {
			found = found || s == k
		}
		if !found {
			t.Errorf("Sysctls lacks %s, which kube-proxy may change", k)
		}
	}
	if stopOrder[0] != "kube-proxy" {
		t.Errorf("stopOrder starts with %s: kube-proxy must stop first, or it writes its rules again after the restore", stopOrder[0])
	}
}
