//go:build linux || darwin || freebsd

package boltdb

import (
	"sync"
	"syscall"
	"time"
)

// diskFree returns the bytes that an unprivileged writer may still use on
// the file system that holds path; ok is false when it cannot tell.
//
// Every delivery asks (checkRoom), and statfs is a system call a message.
// An answer of at least diskFreeAmple is kept for diskFreeFresh: no burst
// of deliveries writes a gigabyte in a tenth of a second, so the cached
// answer still leaves room for any one message and its commit. A disk
// nearer to full is asked every time, as before.
func diskFree(path string) (free int64, ok bool) {
	now := time.Now()
	freeCache.Lock()
	if freeCache.path == path && now.Sub(freeCache.at) < diskFreeFresh {
		free := freeCache.free
		freeCache.Unlock()
		return free, true
	}
	freeCache.Unlock()
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, false
	}
	free = int64(st.Bavail) * int64(st.Bsize)
	if free >= diskFreeAmple {
		freeCache.Lock()
		freeCache.path, freeCache.free, freeCache.at = path, free, now
		freeCache.Unlock()
	}
	return free, true
}

// freeCache is diskFree's last ample answer.
var freeCache struct {
	sync.Mutex
	path string
	free int64
	at   time.Time
}

const (
	diskFreeAmple = 1 << 30
	diskFreeFresh = 100 * time.Millisecond
)
