package localcluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Sysctls are the kernel settings a kubelet (container manager setup),
// the CNI bridge plugin (a gateway turns forwarding on) and kube-proxy
// (conntrack sizes and timeouts, route_localnet in iptables mode; its
// configuration asks it not to, and the check proves it) may change.
var Sysctls = []string{
	"vm.overcommit_memory",
	"vm.panic_on_oom",
	"kernel.panic",
	"kernel.panic_on_oops",
	"kernel.keys.root_maxkeys",
	"kernel.keys.root_maxbytes",
	"net.ipv4.ip_forward",
	"net.ipv6.conf.all.forwarding",
	"net.netfilter.nf_conntrack_max",
	"net.netfilter.nf_conntrack_tcp_timeout_established",
	"net.netfilter.nf_conntrack_tcp_timeout_close_wait",
	"net.ipv4.conf.all.route_localnet",
	"net.bridge.bridge-nf-call-iptables",
}

// WatchedPaths are host directories a kubelet, containerd's CRI plugin or
// the CNI plugins create whatever their configuration says.
var WatchedPaths = []string{
	"/var/lib/kubelet",
	"/var/log/pods",
	"/var/log/containers",
	"/var/lib/cni",
	"/run/netns",
	"/etc/cni",
	"/opt/cni",
	"/etc/kubernetes",
	"/run/kubernetes",
	"/var/run/kubernetes",
}

// ruleTools are the rule dumps compared, with the command that restores
// each. The legacy tools are compared only where they exist.
var ruleTools = []struct{ save, restore string }{
	{"iptables-save", "iptables-restore"},
	{"ip6tables-save", "ip6tables-restore"},
	{"iptables-legacy-save", "iptables-legacy-restore"},
	{"ip6tables-legacy-save", "ip6tables-legacy-restore"},
}

// ignoredMountPrefixes are Docker's: its containers come and go while a
// cluster runs and are not this package's to compare.
var ignoredMountPrefixes = []string{"/var/lib/docker/", "/run/docker/", "/var/run/docker/"}

// HostState is what Up records before it changes anything and Down checks
// afterwards. Every field is comparable text, so a difference can be
// printed as it is.
type HostState struct {
	Sysctls   map[string]string   `json:"sysctls"`
	Rules     map[string][]string `json:"rules"`      // save tool → normalized lines
	NFTTables []string            `json:"nft_tables"` // "ip filter", "ip6 nat", ...
	Mounts    []string            `json:"mounts"`     // "mountpoint fstype"
	Links     []string            `json:"links"`      // interface names
	Paths     map[string]string   `json:"paths"`      // watched path → "absent" or its entries
	Cgroups   []string            `json:"cgroups"`    // kubepods cgroup directories
}

// CaptureHostState reads the host's current state. Raw rule dumps (for a
// restore) are written to rawDir when it is not empty.
func CaptureHostState(rawDir string) (HostState, error) {
	s := HostState{Sysctls: map[string]string{}, Rules: map[string][]string{}, Paths: map[string]string{}}
	for _, k := range Sysctls {
		v, err := readSysctl(k)
		if err != nil {
			continue // a key this kernel does not have
		}
		s.Sysctls[k] = v
	}
	for _, t := range ruleTools {
		if _, err := exec.LookPath(t.save); err != nil {
			continue
		}
		raw, err := exec.Command(t.save).Output()
		if err != nil {
			return s, fmt.Errorf("%s: %w", t.save, err)
		}
		s.Rules[t.save] = NormalizeRules(raw)
		if rawDir != "" {
			if err := os.WriteFile(filepath.Join(rawDir, t.save+".rules"), raw, 0o600); err != nil {
				return s, err
			}
		}
	}
	if out, err := exec.Command("nft", "list", "tables").Output(); err == nil {
		s.NFTTables = parseNFTTables(out)
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return s, err
	}
	s.Mounts = mountList(mi)
	if out, err := exec.Command("ip", "-o", "link", "show").Output(); err == nil {
		s.Links = parseLinks(out)
	}
	for _, p := range WatchedPaths {
		s.Paths[p] = describePath(p)
	}
	s.Cgroups = kubepodsCgroups()
	return s, nil
}

func sysctlPath(key string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
}

func readSysctl(key string) (string, error) {
	b, err := os.ReadFile(sysctlPath(key))
	return strings.Join(strings.Fields(string(b)), " "), err
}

var counters = regexp.MustCompile(`\s*\[\d+:\d+\]`)

// NormalizeRules turns an iptables-save dump into "table: line" lines,
// without comments, COMMIT lines and packet counters, in the dump's order.
func NormalizeRules(dump []byte) []string {
	var out []string
	table := ""
	for _, line := range strings.Split(string(dump), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || line == "COMMIT":
		case strings.HasPrefix(line, "*"):
			table = line[1:]
			out = append(out, table+":")
		default:
			if strings.HasPrefix(line, "[") { // iptables-save -c
				if i := strings.Index(line, "]"); i >= 0 {
					line = strings.TrimSpace(line[i+1:])
				}
			}
			out = append(out, table+": "+counters.ReplaceAllString(line, ""))
		}
	}
	return out
}

func parseNFTTables(out []byte) []string {
	var t []string
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "table "); ok {
			t = append(t, rest)
		}
	}
	sort.Strings(t)
	return t
}

// mountList gives "mountpoint fstype" per mount of a mountinfo, sorted,
// without Docker's.
func mountList(mountinfo []byte) []string {
	var m []string
	for _, mp := range parseMountinfo(mountinfo) {
		if ignoredMount(mp.point) {
			continue
		}
		m = append(m, mp.point+" "+mp.fstype)
	}
	sort.Strings(m)
	return m
}

func ignoredMount(point string) bool {
	for _, p := range ignoredMountPrefixes {
		if strings.HasPrefix(point+"/", p) {
			return true
		}
	}
	return false
}

type mountEntry struct{ point, fstype string }

// parseMountinfo reads /proc/<pid>/mountinfo (proc(5)): the fifth field is
// the mount point, octal-escaped; the field after " - " the type.
func parseMountinfo(b []byte) []mountEntry {
	var out []mountEntry
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f := strings.Fields(pre)
		if !ok || len(f) < 5 {
			continue
		}
		typ := strings.Fields(post)
		if len(typ) == 0 {
			continue
		}
		out = append(out, mountEntry{unescapeOctal(f[4]), typ[0]})
	}
	return out
}

func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			var v byte
			ok := true
			for _, c := range []byte(s[i+1 : i+4]) {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + (c - '0')
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parseLinks gives interface names from `ip -o link show`, sorted. A veth
// enslaved to a bridge that is not ours (Docker's containers) is left out.
func parseLinks(out []byte) []string {
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if strings.Contains(line, " master docker") {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func describePath(p string) string {
	entries, err := os.ReadDir(p)
	if err != nil {
		if _, serr := os.Lstat(p); serr != nil {
			return "absent"
		}
		return "present"
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return "entries [" + strings.Join(names, " ") + "]"
}

// pathEntries reverses describePath's "entries [a b]".
func pathEntries(desc string) []string {
	rest, ok := strings.CutPrefix(desc, "entries [")
	if !ok {
		return nil
	}
	return strings.Fields(strings.TrimSuffix(rest, "]"))
}

// kubepodsCgroups lists the kubelet's top-level cgroups (cgroupfs driver)
// under every hierarchy.
func kubepodsCgroups() []string {
	var out []string
	for _, pattern := range []string{"/sys/fs/cgroup/*/kubepods*", "/sys/fs/cgroup/kubepods*"} {
		m, _ := filepath.Glob(pattern)
		for _, d := range m {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				out = append(out, d)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Diff lists how now differs from before, one line per difference, in a
// fixed order; empty means the same.
func Diff(before, now HostState) []string {
	var d []string
	for _, k := range sortedKeys(before.Sysctls) {
		if v := now.Sysctls[k]; v != before.Sysctls[k] {
			d = append(d, fmt.Sprintf("sysctl %s = %s, was %s", k, v, before.Sysctls[k]))
		}
	}
	tools := map[string]bool{}
	for k := range before.Rules {
		tools[k] = true
	}
	for k := range now.Rules {
		tools[k] = true
	}
	for _, t := range sortedKeys(tools) {
		for _, l := range setDiff(now.Rules[t], before.Rules[t]) {
			d = append(d, t+" + "+l)
		}
		for _, l := range setDiff(before.Rules[t], now.Rules[t]) {
			d = append(d, t+" - "+l)
		}
	}
	d = append(d, listDiff("nft table", before.NFTTables, now.NFTTables)...)
	d = append(d, listDiff("mount", before.Mounts, now.Mounts)...)
	d = append(d, listDiff("link", before.Links, now.Links)...)
	d = append(d, listDiff("cgroup", before.Cgroups, now.Cgroups)...)
	for _, p := range sortedKeys(before.Paths) {
		if v := now.Paths[p]; v != before.Paths[p] {
			d = append(d, fmt.Sprintf("path %s: %s, was %s", p, v, before.Paths[p]))
		}
	}
	return d
}

func listDiff(what string, before, now []string) []string {
	var d []string
	for _, x := range setDiff(now, before) {
		d = append(d, what+" + "+x)
	}
	for _, x := range setDiff(before, now) {
		d = append(d, what+" - "+x)
	}
	return d
}

// setDiff returns the elements of a not in b, counting repeats (a rule
// added twice is a difference), in a's order.
func setDiff(a, b []string) []string {
	n := map[string]int{}
	for _, x := range b {
		n[x]++
	}
	var out []string
	for _, x := range a {
		if n[x] > 0 {
			n[x]--
			continue
		}
		out = append(out, x)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

// RestoreHostState writes back what before recorded and the rule dumps
// saved in rawDir: sysctls, iptables (per tool whose rules differ, the
// saved dump through its restore command), nftables tables that did not
// exist before (a restore cannot remove a table), and what it could not
// restore as errors. Rules that others added after the record are lost
// with the restore; they are printed to log first.
func RestoreHostState(before HostState, rawDir string, logf func(string, ...any)) []error {
	var errs []error
	for _, k := range sortedKeys(before.Sysctls) {
		want := before.Sysctls[k]
		if v, err := readSysctl(k); err == nil && v == want {
			continue
		}
		if err := os.WriteFile(sysctlPath(k), []byte(want), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("sysctl %s=%s: %w", k, want, err))
		} else {
			logf("kube-down: sysctl %s restored to %s", k, want)
		}
	}
	for _, t := range ruleTools {
		saved, ok := before.Rules[t.save]
		if !ok {
			continue
		}
		raw, err := exec.Command(t.save).Output()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.save, err))
			continue
		}
		now := NormalizeRules(raw)
		if equalLines(now, saved) {
			continue
		}
		savedTables := map[string]bool{}
		for _, l := range saved {
			if t, ok := strings.CutSuffix(l, ":"); ok && !strings.Contains(t, " ") {
				savedTables[t] = true
			}
		}
		for _, l := range setDiff(now, saved) {
			table, _, _ := strings.Cut(l, ":")
			if savedTables[table] && !ownRule(l) {
				logf("kube-down: %s: reverting a rule that is not the cluster's: %s", t.save, l)
			}
		}
		dump, err := os.ReadFile(filepath.Join(rawDir, t.save+".rules"))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cmd := exec.Command(t.restore)
		cmd.Stdin = bytes.NewReader(dump)
		if out, err := cmd.CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v: %s", t.restore, err, out))
			continue
		}
		logf("kube-down: %s rules restored", strings.TrimSuffix(t.save, "-save"))
	}
	if out, err := exec.Command("nft", "list", "tables").Output(); err == nil {
		for _, t := range setDiff(parseNFTTables(out), before.NFTTables) {
			args := append([]string{"delete", "table"}, strings.Fields(t)...)
			if out, err := exec.Command("nft", args...).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("nft delete table %s: %v: %s", t, err, out))
			} else {
				logf("kube-down: nft table %s deleted (created while the cluster ran)", t)
			}
		}
	}
	return errs
}

// ownRule tells the rules a kubelet and the CNI plugins add to a table
// that existed before (a table created since is theirs as a whole).
func ownRule(normalized string) bool {
	_, rule, _ := strings.Cut(normalized, ": ")
	return rule == "" || strings.Contains(rule, "KUBE-") || strings.Contains(rule, "CNI-") || strings.Contains(rule, BridgeName)
}

func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
