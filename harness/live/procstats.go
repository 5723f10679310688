package live

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// The process's resources and the machine's CPU, from Linux's /proc. Each
// reports false where /proc does not have it (other systems), and the
// summary then leaves the field out.

// residentBytes returns the process's resident set size
// (/proc/self/statm: the second field, in pages).
func residentBytes() (int64, bool) {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}

// openFiles returns how many file descriptors the process has open, not
// counting the one that reads /proc/self/fd.
func openFiles() (int64, bool) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, false
	}
	return int64(len(names)) - 1, true
}

// machineJiffies returns the busy and total time of all the machine's CPUs
// (/proc/stat's "cpu" line; idle and iowait are not busy, steal is), in
// jiffies.
func machineJiffies() (busy, total uint64, ok bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, false
	}
	// user nice system idle iowait irq softirq steal; guest time is
	// counted in user and nice already.
	for i, f := range fields[1:min(len(fields), 9)] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total, true
}
