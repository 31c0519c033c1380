package boltdb_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"burner/internal/benchdata"
)

// BenchmarkCommitIO measures the disk under a bbolt commit without bbolt:
// pages of 4 KB written into an allocated file, an fdatasync, one more
// page (the meta page) and a second fdatasync. The pages are either
// scattered over the file, as a commit's dirty B+tree pages mostly are, or
// one after another. docs/performance.md reads the figures: on the
// virtio disk of the development machines a scattered page costs about as
// much as the two syncs together, so a commit's price is its number of
// scattered pages.
func BenchmarkCommitIO(b *testing.B) {
	const pageSize = 4096
	fileSize := 64 << 20
	if benchdata.SmokeRun() {
		fileSize = 1 << 20
	}
	path := filepath.Join(b.TempDir(), "pages")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	// Written, not truncated or fallocated: writing into a hole costs the
	// file system an allocation on every sync, which bbolt mostly avoids
	// by reusing its free pages.
	if _, err := f.Write(make([]byte, fileSize)); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	page := make([]byte, pageSize)
	pages := fileSize / pageSize
	for _, n := range []int{1, 4, 16} {
		for _, layout := range []string{"scattered", "sequential"} {
			b.Run(fmt.Sprintf("pages=%d/%s", n, layout), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				next := 2
				for b.Loop() {
					for range n {
						p := next
						if layout == "scattered" {
							p = 2 + rng.IntN(pages-2)
						} else if next++; next == pages {
							next = 2
						}
						if _, err := f.WriteAt(page, int64(p)*pageSize); err != nil {
							b.Fatal(err)
						}
					}
					if err := syscall.Fdatasync(int(f.Fd())); err != nil {
						b.Fatal(err)
					}
					if _, err := f.WriteAt(page, 0); err != nil {
						b.Fatal(err)
					}
					if err := syscall.Fdatasync(int(f.Fd())); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
