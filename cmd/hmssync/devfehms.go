package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hmssync/hmssync/applier/fetest"
	"github.com/hmssync/hmssync/hms"
)

// devFEMetastoreFlag is `dev fe --hms URI`: the fake FE loads its caches (lazy
// catalog initialisation, REFRESH, native full refreshes) from that metastore,
// real or fake, as a Doris FE would. The end-to-end suite against a real Hive
// uses it.
func devFEMetastoreFlag() cli.Flag {
	return &cli.StringFlag{Name: "hms",
		Usage: "thrift://host:port of a metastore the FE loads its caches from (databases, tables, partition names); " +
			"an alternative to --truth-url"}
}

// devFEMetastoreLoader sets opts.Loader from --hms when it is given; the
// returned close releases the metastore client.
func devFEMetastoreLoader(c *cli.Context, opts *fetest.Options) (close func(), err error) {
	uri := c.String("hms")
	if uri == "" {
		return func() {}, nil
	}
	if c.String("truth-url") != "" {
		return nil, fmt.Errorf("--hms and --truth-url: give one source of the FE's truth")
	}
	krb, err := kerberosFromFlags(c)
	if err != nil {
		return nil, err
	}
	client, err := hms.NewClient(hms.ClientConfig{URIs: []string{uri}, DialTimeout: 5 * time.Second, CallTimeout: 30 * time.Second, Kerberos: krb})
	if err != nil {
		return nil, fmt.Errorf("--hms: %w", err)
	}
	opts.Loader = metastoreLoader(client)
	return func() { _ = client.Close() }, nil
}
