// Package sidecar is the one place that wires a sidecar from a validated
// configuration (internal/config): the etcd client, the applier and its FE
// health check, the election, the cursor store, one metastore client per
// catalog, and the agent over them. `hmssync run` (Run), the demo and the
// benchmark's sidecars (New) all go through it, so that they exercise the
// production wiring rather than a copy of it.
//
// Nothing is wired in a circle: the agent counts the FE requests itself
// (it hands the applier an observer with each call, applier.WithObserver),
// and the one FE health check is built first and given to both the elector
// (whose candidacy it gates) and the agent (which runs it).
//
// LoadConfig is config.Load with the check that needs the metastore client
// (a Kerberos keytab and krb5.conf), which the config package cannot link.
package sidecar
