//go:build !race

package agent_test

// parallelTests is how many tests run at once by default (raiseDefaultParallel).
const parallelTests = 8
