//go:build linux || darwin || freebsd

package boltdb

import "syscall"

// diskFree returns the bytes that an unprivileged writer may still use on
// the file system that holds path; ok is false when it cannot tell.
func diskFree(path string) (free int64, ok bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
