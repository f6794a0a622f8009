package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hmssync/hmssync/internal/config"
	"github.com/hmssync/hmssync/internal/sidecar"
)

// The bench runs every sidecar as a child process of its own, started from the
// bench's own executable (Options.SidecarArgs: `hmssync bench sidecar`), so that
// each sidecar's CPU time and peak RSS are read from the kernel for exactly that
// sidecar, and so that the sidecars run the production code path (sidecar.Run,
// as `hmssync run` does) without sharing a heap or a scheduler with the fakes
// and the measuring code.

// RunSidecar is the whole life of a child (`hmssync bench sidecar`): it runs
// the sidecar configured in cfgPath until SIGTERM, or until its standard input
// closes, which happens when the bench process ends in any way, so that no
// sidecar outlives its bench. profile, when set, is a path prefix: the child
// writes its CPU profile to PREFIX.cpu.pprof and its allocation profile to
// PREFIX.allocs.pprof when it stops. version is reported in /status. The
// result is the process's exit code: 2 for a configuration it cannot run, 1
// for a sidecar that failed.
func RunSidecar(cfgPath, profile, version string) int {
	// The environment is not consulted: a user's HMSSYNC_… settings must not
	// change what the bench measures.
	cfg, sec, err := sidecar.LoadConfig(config.Sources{File: cfgPath, Getenv: func(string) string { return "" }})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench sidecar:", err)
		return 2
	}
	log, level, err := sidecar.NewLogger(cfg.Log.Level, cfg.Log.Format)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench sidecar:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	var cpuFile *os.File
	if profile != "" {
		if cpuFile, err = os.Create(profile + ".cpu.pprof"); err == nil {
			err = pprof.StartCPUProfile(cpuFile)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench sidecar: cpu profile:", err)
			return 2
		}
	}
	err = sidecar.Run(ctx, cfg, sec, log, level, version)
	_ = log.Sync()
	if profile != "" {
		pprof.StopCPUProfile()
		_ = cpuFile.Close()
		if f, ferr := os.Create(profile + ".allocs.pprof"); ferr == nil {
			runtime.GC()
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
			_ = f.Close()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench sidecar:", err)
		return 1
	}
	return 0
}

// benchChild is one sidecar process started by the bench.
type benchChild struct {
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	logPath string
	done    chan struct{} // closed when the process has exited
	waitErr error         // valid after done
}

// startBenchChild writes cfg to dir and starts a sidecar process with it: this
// executable with args (Options.SidecarArgs). Its log (warnings and errors)
// goes to a file in dir, shown when a run fails.
func startBenchChild(dir string, args []string, cfg config.Config, profilePrefix string) (*benchChild, error) {
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: configuration of %s: %w", cfg.Member, err)
	}
	cfgPath := filepath.Join(dir, cfg.Member+".yaml")
	if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
		return nil, fmt.Errorf("bench: write the configuration of %s: %w", cfg.Member, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bench: find this program to start the sidecars from it: %w", err)
	}
	args = append(append([]string(nil), args...), "--config", cfgPath)
	if profilePrefix != "" {
		args = append(args, "--profile", profilePrefix)
	}
	return startChild(dir, cfg.Member, exe, args)
}

// startChild starts exe with args as the child name, its output going to
// name.log in dir. The environment is this process's without the HMSSYNC_…
// settings, which would otherwise override the configuration file the bench
// wrote (flags > environment > file) and change what is measured.
func startChild(dir, name, exe string, args []string) (*benchChild, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("bench: sidecar log: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HMSSYNC_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	dieWithParent(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("bench: sidecar stdin: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start sidecar %s (%s): %w", name, exe, err)
	}
	c := &benchChild{name: name, cmd: cmd, stdin: stdin, logPath: logPath, done: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// pid is the child's process id.
func (c *benchChild) pid() int { return c.cmd.Process.Pid }

// exited reports whether the process has ended.
func (c *benchChild) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop asks the sidecar to shut down as an orchestrator would (SIGTERM, which
// makes a master resign) and kills it if it has not exited within grace.
func (c *benchChild) stop(grace time.Duration) error {
	if c.exited() {
		return c.waitErr
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		_ = c.cmd.Process.Kill()
		<-c.done
		_ = c.stdin.Close()
		return fmt.Errorf("sidecar %s did not stop within %s after SIGTERM; killed", c.name, grace)
	}
	_ = c.stdin.Close()
	var ee *exec.ExitError
	if errors.As(c.waitErr, &ee) {
		return fmt.Errorf("sidecar %s exited with %v", c.name, c.waitErr)
	}
	return c.waitErr
}

// logTail is the end of the child's log, for error messages.
func (c *benchChild) logTail() string {
	data, err := os.ReadFile(c.logPath)
	if err != nil {
		return ""
	}
	const max = 2000
	if len(data) > max {
		data = data[len(data)-max:]
	}
	return string(data)
}
