package config

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// maxPasswordFile bounds what is read from a password file: a password is
// bytes, not megabytes, and a path pointing at the wrong file (a log, a device)
// must not fill the memory.
const maxPasswordFile = 64 << 10

// ReadPassword is the one rule for where a password comes from, used by `run`
// and the operator commands alike: the file named by fileKey if one is set,
// else the environment variable envName. It returns warnings for the operator
// (a file others may read) besides the password.
func ReadPassword(file, fileKey, envName string, getenv func(string) string) (password string, warnings []string, err error) {
	if file == "" {
		return getenv(envName), nil, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return "", nil, fmt.Errorf("%s = %q: want a readable file: %w", fileKey, file, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", nil, fmt.Errorf("%s = %q: %w", fileKey, file, err)
	}
	if !st.Mode().IsRegular() {
		return "", nil, fmt.Errorf("%s = %q: want a regular file holding the password, not %s", fileKey, file, st.Mode().Type())
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		warnings = append(warnings, fmt.Sprintf("%s %q is readable by its group or by others (mode %#o); chmod 600 it", fileKey, file, perm))
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPasswordFile+1))
	if err != nil {
		return "", nil, fmt.Errorf("%s = %q: %w", fileKey, file, err)
	}
	if len(b) > maxPasswordFile {
		return "", nil, fmt.Errorf("%s = %q: the file is larger than %d bytes; want a file holding only the password", fileKey, file, maxPasswordFile)
	}
	if getenv(envName) != "" {
		warnings = append(warnings, fmt.Sprintf("both %s and %s are set; the file wins", fileKey, envName))
	}
	return strings.TrimRight(string(b), "\r\n"), warnings, nil
}
