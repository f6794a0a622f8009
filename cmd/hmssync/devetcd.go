package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/hmssync/hmssync/internal/embedetcd"
)

func devEtcdCommand() *cli.Command {
	return &cli.Command{
		Name:  "etcd",
		Usage: "run a single-node etcd (the embedded server) as a process, until SIGTERM or SIGINT",
		Description: "For manual testing and the end-to-end scripts: several `hmssync run` processes share it\n" +
			"through --etcd-endpoints http://LISTEN. Its data stays in --dir, so a restart resumes.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:2379", Usage: "client address host:port"},
			&cli.StringFlag{Name: "dir", Required: true, Usage: "data directory (created if missing)"},
		},
		Action: func(c *cli.Context) error {
			ctx, stop := signalContext(c.Context)
			defer stop()
			srv, err := embedetcd.Start(ctx, embedetcd.Config{Dir: c.String("dir"), ClientAddr: c.String("listen")})
			if err != nil {
				return fmt.Errorf("dev etcd (--listen %s, --dir %s): %w", c.String("listen"), c.String("dir"), err)
			}
			defer srv.Close()
			fmt.Fprintf(c.App.ErrWriter, "etcd serving clients on %v, data in %s\n", srv.Endpoints(), c.String("dir"))
			select {
			case <-ctx.Done():
				return nil
			case err := <-srv.Err():
				return fmt.Errorf("dev etcd: %w", err)
			}
		},
	}
}
