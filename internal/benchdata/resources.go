package benchdata

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// CPUTime returns the user and system CPU time of this process so far, in
// nanoseconds: what a benchmark divides by its operations to report the
// CPU an operation cost the process, whatever ran it (handlers, the
// daemon's goroutines, the runtime).
func CPUTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// Peak measures the peak resident memory of a stretch of a benchmark.
type Peak struct {
	tb   testing.TB
	base int64 // KiB resident at the start
}

// StartPeak returns the heap to the kernel, so that what earlier runs
// left does not count, and resets the process's peak resident size to
// what it holds now (Linux: "5" to /proc/self/clear_refs). It skips the
// benchmark where that is not possible.
func StartPeak(tb testing.TB) *Peak {
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		tb.Skipf("cannot reset the peak resident size (%v): not Linux?", err)
	}
	return &Peak{tb: tb, base: vmHWM(tb)}
}

// MB returns how far the peak resident size rose above the start, in MiB.
func (p *Peak) MB() float64 { return float64(vmHWM(p.tb)-p.base) / 1024 }

// vmHWM returns the process's peak resident size, in KiB.
func vmHWM(tb testing.TB) int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Skipf("cannot read /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb
		}
	}
	tb.Skip("no VmHWM in /proc/self/status")
	return 0
}
