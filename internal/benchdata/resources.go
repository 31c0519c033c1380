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

// ProcessesCPUTime returns the user and system CPU time so far, in
// nanoseconds, of every process on the machine whose command is comm (as
// /proc/PID/stat names it: "postgres" for PostgreSQL's postmaster, its
// backends and workers), and whether it could read any. A benchmark of
// the PostgreSQL engine adds it to its own: the backend does most of a
// query's work. The kernel counts in clock ticks (10 ms), so it wants
// many operations.
func ProcessesCPUTime(comm string) (int64, bool) {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	tick := int64(1e9 / 100) // USER_HZ: 100 on every Linux that Go supports
	var total int64
	found := false
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after
		// its closing parenthesis; utime and stime are fields 14 and 15.
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open || s[open+1:close] != comm {
			continue
		}
		f := strings.Fields(s[close+1:])
		if len(f) < 13 {
			continue
		}
		u, err1 := strconv.ParseInt(f[11], 10, 64)
		st, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		total += (u + st) * tick
		found = true
	}
	return total, found
}
