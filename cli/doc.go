// Package cli implements the kubesift command line: one function per verb, each with its own
// pflag set, and the named exit codes scripts rely on. It holds no SQL: store and queries do.
// docs/cli.md is generated from the verbs' flag sets by a test (docs_test.go; UPDATE_GOLDENS=1
// rewrites it).
package cli
