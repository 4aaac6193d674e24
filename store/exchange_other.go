//go:build !linux

package store

// exchange swaps the directories a and b: without Linux's renameat2 it cannot (errNoExchange).
func exchange(a, b string) error { return errNoExchange }
