//go:build linux

package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// dieWithParent makes the kernel send the child SIGTERM when the bench process
// dies, however it dies: a sidecar started as `hmssync run` (which, unlike
// `bench sidecar`, does not watch its standard input) must not outlive the
// bench and keep committing to a metastore benchmark's etcd.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// processCPU is the CPU time (user + system) the process has used so far.
func processCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu time of process %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may contain spaces;
	// the fields after it start with the state (field 3).
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("cpu time of process %d: unexpected /proc/%d/stat", pid, pid)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu time of process %d: short /proc/%d/stat", pid, pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cpu time of process %d: unparsable utime/stime %q %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// processPeakRSS is the process's peak resident set size (VmHWM) in bytes.
func processPeakRSS(pid int) (int64, error) {
	kb, err := procStatusKB(fmt.Sprintf("/proc/%d/status", pid), "VmHWM:")
	if err != nil {
		return 0, fmt.Errorf("peak RSS of process %d: %w", pid, err)
	}
	return kb * 1024, nil
}

func procStatusKB(path, field string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, field); ok {
			v := strings.Fields(rest)
			if len(v) == 0 {
				break
			}
			return strconv.ParseInt(v[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s line", path, field)
}

// loadAverage is the 1, 5 and 15 minute load averages, as `uptime` shows them.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// machineDescription names the CPU model and the memory, for the report.
func machineDescription() string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if kb, err := procStatusKB("/proc/meminfo", "MemTotal:"); err == nil {
		mem = fmt.Sprintf(", %.0f GiB", float64(kb)/(1<<20))
	}
	return model + mem
}

// processRSS is the process's current resident set size (VmRSS) in bytes.
func processRSS(pid int) (int64, error) {
	kb, err := procStatusKB(fmt.Sprintf("/proc/%d/status", pid), "VmRSS:")
	if err != nil {
		return 0, fmt.Errorf("RSS of process %d: %w", pid, err)
	}
	return kb * 1024, nil
}

// processOpenFDs is the number of file descriptors the process holds open:
// the entries of /proc/<pid>/fd.
func processOpenFDs(pid int) (int, error) {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, fmt.Errorf("open file descriptors of process %d: %w", pid, err)
	}
	return len(entries), nil
}
