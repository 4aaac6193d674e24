//go:build unix

package source

import (
	"os"
	"syscall"
)

// fileID returns the device and inode of a file: the same while it grows and after a rename.
func fileID(st os.FileInfo) (device, inode int64, ok bool) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int64(sys.Dev), int64(sys.Ino), true
}
