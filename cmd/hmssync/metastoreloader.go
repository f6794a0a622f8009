package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/hms"
)

// metastoreLoader makes a fake FE load its caches from a real metastore, as a
// Doris FE does: every database, its tables and views, and each table's
// partition names, whatever the catalog's name (one FE catalog per metastore).
// It lives here rather than in fetest so that the fake FE does not depend on
// the metastore client, nor the client on the fake.
func metastoreLoader(cli *hms.Client) func(ctx context.Context, catalog string) (fetest.Truth, error) {
	return func(ctx context.Context, catalog string) (fetest.Truth, error) {
		dbs, err := cli.Databases(ctx)
		if err != nil {
			return nil, fmt.Errorf("loading catalog %s: %w", catalog, err)
		}
		truth := make(fetest.Truth, len(dbs))
		for _, db := range dbs {
			tables, err := cli.Tables(ctx, db)
			if err != nil {
				return nil, fmt.Errorf("loading catalog %s: %w", catalog, err)
			}
			parts := make(map[string][]string, len(tables))
			for _, t := range tables {
				names, err := cli.PartitionNames(ctx, db, t)
				if errors.Is(err, hms.ErrNoSuchObject) {
					continue // dropped since it was listed: the FE would not show it either
				}
				if err != nil {
					return nil, fmt.Errorf("loading catalog %s: %w", catalog, err)
				}
				slices.Sort(names)
				parts[t] = names
			}
			truth[db] = parts
		}
		return truth, nil
	}
}
