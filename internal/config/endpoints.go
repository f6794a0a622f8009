package config

import "strings"

// EtcdEndpointURL is an etcd endpoint as every command uses it: a bare
// host:port is http://host:port, or https://host:port when TLS files are given
// (etcd.tls, --etcd-ca-file, --etcd-cert-file), as etcdctl takes it; anything
// with a scheme is returned unchanged and checked by its caller.
func EtcdEndpointURL(ep string, tls bool) string {
	ep = strings.TrimSpace(ep)
	if ep == "" || strings.Contains(ep, "://") || strings.ContainsAny(ep, "/ @") {
		return ep
	}
	if tls {
		return "https://" + ep
	}
	return "http://" + ep
}
