// Package test holds the tests of module cloudgotel that need the
// OpenTelemetry SDK, its Prometheus exporter and Prometheus's text parser:
// the instruments read with the SDK's manual reader, span events recorded
// by the trace SDK, and a real scrape over HTTP on 127.0.0.1. It is a
// module of its own, so that cloudgotel requires the OpenTelemetry API
// only.
package test
