//go:build !linux

package store

// hugePagesForNewRegion returns a function that does nothing: transparent huge pages are Linux's.
func hugePagesForNewRegion(uint64) (advise func()) { return func() {} }
