//go:build linux

package message_test

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time (user and system) the process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process's CPU time per operation since start (that of
// b.ResetTimer or the loop's start). On a machine shared with other work,
// wall-clock ns/op counts the time the benchmark waited for a core; CPU time
// counts only what it used, the garbage collector's included.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(processCPU(b)-start)/float64(b.N), "cpu-ns/op")
}
