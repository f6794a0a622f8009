package hmstest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// StateFile is the file in a state directory (`dev hms --state DIR`) that
// keeps the metastore.
const StateFile = "hms-state.json"

// LoadStateDir loads the state saved in dir (SaveStateDir) into s; false when
// there is none yet (a first start).
func (srv *Server) LoadStateDir(dir string) (bool, error) {
	f, err := os.Open(filepath.Join(dir, StateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("state directory: %w", err)
	}
	defer f.Close()
	if err := srv.LoadState(f); err != nil {
		return false, fmt.Errorf("state directory: %s: %w (remove it to start with an empty metastore)", f.Name(), err)
	}
	return true, nil
}

// SaveStateDir writes the server's state to dir, atomically (a temporary file
// renamed over the old one), so that a process killed mid-write leaves the
// previous state.
func (srv *Server) SaveStateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, StateFile+".*")
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	if err := srv.SaveState(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("state directory: saving: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, StateFile)); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	return nil
}
