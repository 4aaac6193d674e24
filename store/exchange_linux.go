package store

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchange swaps the directories a and b atomically (renameat2 RENAME_EXCHANGE). A file system
// that cannot (NFS, CephFS, SMB: EFS, Filestore, Azure Files answer EINVAL) gives errNoExchange.
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return errNoExchange
	}
	return err
}
