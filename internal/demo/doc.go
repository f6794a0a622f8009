// Package demo is `hmssync demo`: a whole deployment in one process, an
// embedded etcd, a fake metastore (hms/hmstest) running a workload, three fake
// FEs (applier/fetest) and three sidecars built by internal/sidecar exactly as
// `run` builds them. Run tells the story (the election, the master killed
// midway, the takeover, the restarted member resuming from its durable cursor)
// and succeeds once every FE holds the metastore's state, which is also how
// its test proves the production wiring end to end.
//
// It is one of the few production packages that wire in the test doubles
// (SPEC §1).
package demo
