// Package localcluster runs a real single-node Kubernetes on this machine
// and puts the machine back as it was afterwards: the cluster behind
// `make kube-up` and `make kube-down`, for lbchaos's own tests and for
// trying `--backends kube` locally.
//
// Up builds kube-apiserver, kube-controller-manager, kube-scheduler and
// kubelet from the k8s.io/kubernetes module (cached per version), takes etcd
// and the CNI plugins out of Debian's packages without installing them, runs
// a containerd of its own with the CRI plugin enabled, and starts the
// components as detached processes whose logs, certificates and data live in
// one state directory. Before it changes anything it records the host state
// that a kubelet and a CNI bridge change (sysctls, iptables rules, mounts,
// network links, a few well-known directories, cgroups); Down stops what Up
// started, removes what the pods left, restores that record and then checks
// the host against it.
//
// It is Go rather than a shell script because the parts that must be right
// — which process is ours before a signal is sent, certificates, waiting
// with a deadline while watching for a component that died, and comparing
// host state — are plain functions here that the package's tests exercise
// without a cluster.
package localcluster
