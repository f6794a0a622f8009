package hms

import (
	"context"
	"errors"
	"fmt"

	"github.com/hmssync/hmssync/hms/internal/gen/hmsthrift"
)

// ErrNoSuchObject is wrapped by errors of calls about a database or table the
// metastore does not have (its NoSuchObjectException), as when it was dropped
// between listing and asking.
var ErrNoSuchObject = errors.New("no such object in the metastore")

// Tables lists the tables and views of db (get_all_tables). A database that
// does not exist has none.
func (c *Client) Tables(ctx context.Context, db string) ([]string, error) {
	var tables []string
	err := c.call(ctx, "get_all_tables", func(ctx context.Context, cl *hmsthrift.ThriftHiveMetastoreClient) error {
		var err error
		tables, err = cl.GetAllTables(ctx, db)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("tables of database %q: %w", db, err)
	}
	return tables, nil
}

// PartitionNames lists every partition of db.table by name ("k1=v1/k2=v2", with
// Hive's escaping; get_partition_names with max_parts -1). An unpartitioned
// table has none; a table that does not exist is an error wrapping
// ErrNoSuchObject.
func (c *Client) PartitionNames(ctx context.Context, db, table string) ([]string, error) {
	var names []string
	err := c.call(ctx, "get_partition_names", func(ctx context.Context, cl *hmsthrift.ThriftHiveMetastoreClient) error {
		var err error
		names, err = cl.GetPartitionNames(ctx, db, table, -1)
		return err
	})
	var nso *hmsthrift.NoSuchObjectException
	if errors.As(err, &nso) {
		return nil, fmt.Errorf("partitions of table %s.%s: %w: %s", db, table, ErrNoSuchObject, nso.GetMessage())
	}
	if err != nil {
		return nil, fmt.Errorf("partitions of table %s.%s: %w", db, table, err)
	}
	return names, nil
}
