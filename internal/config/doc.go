// Package config is the sidecar's configuration: its types (the YAML schema of
// SPEC §6), how it is loaded and what a valid one is.
//
// Load is the whole API: defaults, then the YAML file, then HMSSYNC_…
// environment variables, then flags, then validation of every key at once (each
// error names the key as the operator wrote it, the bad value and what is
// allowed), then the passwords (Secrets), which are never fields of Config so
// that printing a Config can never print one.
//
// The package links nothing of the project but internal/names (the name rules
// shared with the operator commands) and internal/redact (URLs in errors
// without their passwords): what needs a metastore client, parsing a
// Kerberos keytab, is handed in through Sources.CheckKerberos. It does not
// connect to anything; TLS files and password files are read here so that a
// wrong path stops start-up rather than every connection.
package config
