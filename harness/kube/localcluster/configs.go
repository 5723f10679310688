package localcluster

import (
	"fmt"
	"strings"
)

// Network settings of the cluster. Pods that lbchaos runs use the host's
// network (127.0.0.1 ports); the bridge serves the rest.
const (
	BridgeName  = "lbckube0"
	PodSubnet   = "10.244.0.0/24"
	ServiceCIDR = "10.97.0.0/24"
	serviceIP   = "10.97.0.1" // first address of ServiceCIDR: the kubernetes Service
)

// Ports of the components, all on 127.0.0.1.
type Ports struct {
	Etcd, EtcdPeer, APIServer, Kubelet, KubeletHealthz, ControllerManager, Scheduler int
	ProxyHealthz, ProxyMetrics                                                       int
}

// DefaultPorts avoid the components' well-known ports where a choice
// exists, so a cluster on the host (or a stray etcd) does not collide.
var DefaultPorts = Ports{Etcd: 23790, EtcdPeer: 23800, APIServer: 16443, Kubelet: 10250, KubeletHealthz: 10248, ControllerManager: 10257, Scheduler: 10259,
	ProxyHealthz: 10256, ProxyMetrics: 10249}

func (p Ports) list() []int {
	return []int{p.Etcd, p.EtcdPeer, p.APIServer, p.Kubelet, p.KubeletHealthz, p.ControllerManager, p.Scheduler, p.ProxyHealthz, p.ProxyMetrics}
}

// ContainerdConfig is the second containerd's configuration: CRI enabled
// (the host's, Docker's, has it disabled), its own root, state and socket,
// the native snapshotter (works on any filesystem; the images are small),
// restrict_oom_score_adj (a process without CAP_SYS_RESOURCE cannot lower
// its OOM score, which runc otherwise tries for every sandbox), and the
// locally built pause image as the sandbox image, so nothing is pulled.
// AppArmor stays off: containerd would load a profile into the kernel that
// nothing unloads.
func ContainerdConfig(l Layout, sandboxImage string) string {
	d := l.ContainerdDir()
	return fmt.Sprintf(`version = 2
root = %q
state = %q
oom_score = 0

[grpc]
  address = %q

[ttrpc]
  address = ""

[debug]
  address = ""
  level = "info"

[metrics]
  address = ""

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = %q
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = %q
    restrict_oom_score_adj = true
    enable_selinux = false
    disable_apparmor = true
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "native"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
          Root = %q
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = %q
      conf_dir = %q
      max_conf_num = 1
`, d+"/root", d+"/state", l.ContainerdSocket(), d+"/opt", sandboxImage, d+"/runc", l.CNIBinDir(), l.CNIConfDir())
}

// CNIConfig is a bridge network for pods that do not use the host's
// network: no masquerading (no NAT rules; the machine reaches nothing
// outside anyway) and its IP allocations in the state directory.
func CNIConfig(l Layout) string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "lbchaos-kube",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": %q
      }
    }
  ]
}
`, BridgeName, PodSubnet, l.CNIDataDir())
}

// KubeletConfig is the kubelet's configuration file. failCgroupV1: false
// and cgroupDriver: cgroupfs let it run on a cgroup v1 host without
// systemd; the eviction and image GC thresholds keep a full disk from
// tainting the node or deleting the locally imported images, which cannot
// be pulled again.
func KubeletConfig(l Layout, p Ports) string {
	return strings.TrimLeft(fmt.Sprintf(`
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%s
podLogsDir: %s
tlsCertFile: %s
tlsPrivateKeyFile: %s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
clusterDomain: cluster.local
failSwapOn: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
serializeImagePulls: false
`, p.Kubelet, p.KubeletHealthz, l.ContainerdSocket(), l.PodLogsDir(),
		l.PKI("kubelet-serving.crt"), l.PKI("kubelet-serving.key"), l.PKI("ca.crt")), "\n")
}

// Component command lines.

func etcdArgs(l Layout, p Ports) []string {
	client := fmt.Sprintf("http://127.0.0.1:%d", p.Etcd)
	peer := fmt.Sprintf("http://127.0.0.1:%d", p.EtcdPeer)
	return []string{
		"--name=lbchaos-kube",
		"--data-dir=" + l.EtcdDataDir(),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=lbchaos-kube=" + peer,
	}
}

func apiserverArgs(l Layout, p Ports) []string {
	return []string{
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", p.Etcd),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", p.APIServer),
		"--cert-dir=" + l.PKIDir(),
		"--tls-cert-file=" + l.PKI("apiserver.crt"),
		"--tls-private-key-file=" + l.PKI("apiserver.key"),
		"--client-ca-file=" + l.PKI("ca.crt"),
		"--service-account-key-file=" + l.PKI("sa.pub"),
		"--service-account-signing-key-file=" + l.PKI("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true",
		"--kubelet-client-certificate=" + l.PKI("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + l.PKI("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority=" + l.PKI("ca.crt"),
		// The node is "localhost": apiserver→kubelet traffic (logs,
		// exec) stays on loopback.
		"--kubelet-preferred-address-types=Hostname",
		"--profiling=false",
	}
}

func controllerManagerArgs(l Layout, p Ports) []string {
	kc := l.Kubeconfig("controller-manager")
	return []string{
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", p.ControllerManager),
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + l.PKI("sa.key"),
		"--root-ca-file=" + l.PKI("ca.crt"),
		"--cluster-signing-cert-file=" + l.PKI("ca.crt"),
		"--cluster-signing-key-file=" + l.PKI("ca.key"),
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--allocate-node-cidrs=false",
		"--profiling=false",
	}
}

func schedulerArgs(l Layout, p Ports) []string {
	kc := l.Kubeconfig("scheduler")
	return []string{
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", p.Scheduler),
		"--leader-elect=false",
		"--profiling=false",
	}
}

func kubeletArgs(l Layout) []string {
	return []string{
		"--config=" + l.KubeletConfig(),
		"--kubeconfig=" + l.Kubeconfig("kubelet"),
		"--root-dir=" + l.KubeletDir(),
		// No --node-ip: a kubelet refuses a loopback one. The node's name
		// keeps the apiserver on loopback (see apiserverArgs).
		"--hostname-override=localhost",
	}
}
