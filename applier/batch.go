package applier

import (
	"fmt"

	"github.com/hmssync/hmssync/change"
)

// checkBatch rejects a batch that no dialect can apply faithfully: a bad catalog
// name, an invalid descriptor, or a name that quoting or JSON cannot carry. Such a
// batch is a deterministic failure: retrying it cannot help, self-healing can.
func checkBatch(b change.Batch) error {
	if err := checkName("catalog", b.Catalog); err != nil {
		return err
	}
	if b.FullRefresh {
		// After an HMS log reset a full refresh legitimately moves to a
		// lower event id, so its range is not checked.
		return nil
	}
	if b.From > b.To {
		return fmt.Errorf("batch (%d, %d] runs backwards", b.From, b.To)
	}
	for _, d := range b.Changes {
		if err := d.Validate(); err != nil {
			return err
		}
		names := []struct{ what, name string }{{"db", d.DB}, {"table", d.Table}, {"db_after", d.DBAfter}, {"table_after", d.TableAfter}}
		for _, n := range names {
			if n.name == "" {
				continue // Validate already demanded the names this op needs
			}
			if err := checkName(n.what, n.name); err != nil {
				return fmt.Errorf("event %d: %w", d.EventID, err)
			}
		}
		for _, p := range d.Partitions {
			if err := checkName("partition", p); err != nil {
				return fmt.Errorf("event %d: %w", d.EventID, err)
			}
		}
	}
	return nil
}
