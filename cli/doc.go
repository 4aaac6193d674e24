// Package cli implements the kubesift command line: one function per verb, each with its own
// pflag set, and the named exit codes scripts rely on.
package cli
