//go:build !linux

package bench

import (
	"errors"
	"os/exec"
	"time"
)

// The per-process figures come from /proc; elsewhere they are reported as
// unavailable (zero) rather than guessed.

var errNoProc = errors.New("per-process CPU and RSS are read from /proc, which this system lacks")

func processCPU(int) (time.Duration, error) { return 0, errNoProc }
func processPeakRSS(int) (int64, error)     { return 0, errNoProc }
func processRSS(int) (int64, error)         { return 0, errNoProc }
func processOpenFDs(int) (int, error)       { return 0, errNoProc }
func loadAverage() string                   { return "unknown" }
func machineDescription() string            { return "unknown" }

// dieWithParent has no portable equivalent of Linux's parent-death signal: a
// child is stopped by the bench as it ends, but not when the bench is killed.
func dieWithParent(*exec.Cmd) {}
