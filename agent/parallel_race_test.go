//go:build race

package agent_test

// parallelTests is how many tests run at once by default (raiseDefaultParallel):
// fewer than without the race detector, which multiplies each test's CPU time
// by about four.
const parallelTests = 4
