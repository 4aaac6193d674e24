// Package testdb gives tests databases with recordings loaded, built once and kept in a cache
// that every test binary shares (in the system temp directory), under a key of everything the
// database depends on: the recipe, the content of its inputs and the module's sources. analyze's
// and htmlreport's tests load the same samples/ scenarios; with the cache a `go test ./...` loads
// each once instead of once per package and test.
package testdb
