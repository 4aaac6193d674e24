//go:build !linux

package store

import (
	"errors"
	"os"
)

// exchange swaps the directories a and b. Without Linux's renameat2 it takes two renames, so a
// reader can find b missing for an instant.
func exchange(a, b string) error {
	tmp := a + ".old"
	if err := os.Rename(b, tmp); err != nil {
		return err
	}
	if err := os.Rename(a, b); err != nil {
		return errors.Join(err, os.Rename(tmp, b))
	}
	return os.Rename(tmp, a)
}
