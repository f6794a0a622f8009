package hms

import (
	"context"
	"errors"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hmssync/hmssync/hms/internal/gen/hmsthrift"
)

// MetastoreUUID returns the metastore database's uuid (get_metastore_db_uuid,
// Hive 3.0+): a restored or replaced metastore database has another one, even
// when its event ids continue above a cursor (SPEC §2a). ok is false when the
// metastore offers none: older servers answer that they do not know the method,
// and a database without a uuid answers with a MetaException. The answer is
// read once per connection: a metastore's database changes only under a
// restarted metastore, which is a new connection.
func (c *Client) MetastoreUUID(ctx context.Context) (uuid string, ok bool, err error) {
	err = c.call(ctx, "get_metastore_db_uuid", func(ctx context.Context, cl *hmsthrift.ThriftHiveMetastoreClient) error {
		if c.identity.conn == cl {
			uuid, ok = c.identity.uuid, c.identity.ok
			return nil
		}
		r, err := cl.GetMetastoreDbUUID(ctx)
		var ae thrift.TApplicationException
		var me *hmsthrift.MetaException
		switch {
		case err == nil:
			uuid, ok = r, r != ""
		case errors.As(err, &ae) && ae.TypeId() == thrift.UNKNOWN_METHOD, errors.As(err, &me):
			uuid, ok = "", false
		default:
			return err
		}
		c.identity.conn, c.identity.uuid, c.identity.ok = cl, uuid, ok
		return nil
	})
	return uuid, ok, err
}
