//go:build !linux

package store

// anonRegion is a mapping of the process; only Linux's are read.
type anonRegion struct{}

// anonRegions returns nothing: only Linux's mappings are read.
func anonRegions(uint64) ([]anonRegion, error) { return nil, nil }

// adviseHugePages does nothing: transparent huge pages are Linux's.
func adviseHugePages(before, after []anonRegion) error { return nil }
