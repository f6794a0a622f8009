// Package examples holds no code: its tests check the deployment examples beside
// it. It is a module of its own so that the Kubernetes API modules the manifest
// test decodes into never reach the hmssync binary's go.mod.
//
//	cd examples && go test ./...
//
// manifests_test.go decodes every Kubernetes manifest strictly (an unknown field
// is an error) and checks how the pieces refer to each other; monitoring_test.go
// runs a real Prometheus against three running sidecars and checks every
// expression of the alert rules and the Grafana dashboard.
package examples
