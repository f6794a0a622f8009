package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hmssync/hmssync/hms/hmstest"
)

// devHMSStateFile is the file `dev hms --state DIR` keeps the metastore in.
const devHMSStateFile = "hms-state.json"

// loadDevHMSState loads dir's saved state into srv; false when there is none
// yet (a first start).
func loadDevHMSState(srv *hmstest.Server, dir string) (bool, error) {
	f, err := os.Open(filepath.Join(dir, devHMSStateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("--state: %w", err)
	}
	defer f.Close()
	if err := srv.LoadState(f); err != nil {
		return false, fmt.Errorf("--state: %s: %w (remove it to start with an empty metastore)", f.Name(), err)
	}
	return true, nil
}

// saveDevHMSState writes srv's state to dir, atomically (a temporary file
// renamed over the old one), so that a process killed mid-write leaves the
// previous state.
func saveDevHMSState(srv *hmstest.Server, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--state: %w", err)
	}
	tmp, err := os.CreateTemp(dir, devHMSStateFile+".*")
	if err != nil {
		return fmt.Errorf("--state: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	if err := srv.SaveState(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("--state: saving: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--state: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, devHMSStateFile)); err != nil {
		return fmt.Errorf("--state: %w", err)
	}
	return nil
}
