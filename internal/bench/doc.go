// Package bench is `hmssync bench`: the benchmark harness behind BENCHMARKS.md.
//
// Run builds, per dialect and per run, a topology on this machine (an embedded
// etcd, a fake metastore holding a template log, fake FEs answering after a set
// latency, one master and two followers) and measures the backlog drain, the
// follower lag, the steady-state latency, the FE statements and etcd writes per
// event, the metastore calls of an idle minute, and each sidecar's CPU and peak
// RSS, against the raw fetch rate of a bare loop over the same log. Every
// figure is a median over the runs (Report).
//
// Each sidecar is a process of its own (RunSidecar, the hidden `hmssync bench
// sidecar`), started from the caller's executable, so that CPU and memory are
// read from the kernel for exactly that sidecar and the sidecars run the
// production wiring (internal/sidecar) without sharing a heap with the fakes.
// It is one of the few production packages that wire in the test doubles
// (SPEC §1).
//
// RunMetastore (`hmssync bench metastore`, driven by scripts/realhms/bench.sh)
// measures against a metastore that already holds a backlog, such as a real
// Hive Metastore: the raw fetch, the fetch with every event decoded, and
// `BINARY run` sidecars of one or more binaries draining it from cursors
// seeded at its start, rounds interleaved.
//
// RunSoak (`hmssync bench soak`) runs three native sidecars under a steady
// workload for a long time, killing the master, restarting etcd and the
// metastore along the way, and reports whether anything grows (the
// least-squares slopes per hour of RSS, goroutines, open file descriptors,
// etcd's size and the lag) and whether every FE ends holding the
// metastore's state.
package bench
