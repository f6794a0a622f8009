package sidecar

import "testing"

// catalogs[].txn_lookback_events: 0 turns the look-back off (the agent's zero
// would be its default of 100000 events); any other value is the window.
func TestTxnLookbackKeyReachesTheAgent(t *testing.T) {
	for _, c := range []struct{ key, want int }{{0, -1}, {1, 1}, {100000, 100000}} {
		if got := txnLookback(c.key); got != c.want {
			t.Errorf("txn_lookback_events %d: agent.Catalog.TxnLookback %d, want %d", c.key, got, c.want)
		}
	}
}
