package smtpd

import (
	"strconv"
	"sync"
	"testing"

	"github.com/emersion/go-smtp"

	"burner/internal/benchdata"
	"burner/internal/hostile"
)

// TestHostileSize: the pathological shapes are as large as a stranger
// may send with the default limit, with room for the Received header.
func TestHostileSize(t *testing.T) {
	if room := DefaultMaxMessageBytes - hostile.Size; room < 1024 || room > 8192 {
		t.Errorf("hostile.Size = %d leaves %d bytes below DefaultMaxMessageBytes (%d), want 1 to 8 KiB for the Received header",
			hostile.Size, room, DefaultMaxMessageBytes)
	}
}

// BenchmarkHostile stores each pathological shape through the real
// daemon over SMTP into a real data file, and reports the CPU it cost the
// process (cpu-ms/op, from getrusage: the daemon and the client, which
// only writes) and the peak of the process's resident memory during the
// run above what it held before (peak-MB, from VmHWM after resetting it).
// The "8-at-once" case sends the shape from 8 connections together.
func BenchmarkHostile(b *testing.B) {
	for _, shape := range hostile.Shapes {
		raw := shape.Make()
		for _, conns := range []int{1, 8} {
			name := shape.Name
			if conns > 1 {
				name += "/" + strconv.Itoa(conns) + "-at-once"
			}
			b.Run(name, func(b *testing.B) {
				db := openDB(b)
				addr := startDaemon(b, db, Options{})
				clients := make([]*smtpClient, conns)
				for i := range clients {
					clients[i] = &smtpClient{c: dial(b, addr)}
				}
				peak := benchdata.StartPeak(b)
				cpu := benchdata.CPUTime()
				b.ResetTimer()
				for b.Loop() {
					var wg sync.WaitGroup
					for _, c := range clients {
						wg.Add(1)
						go func() {
							defer wg.Done()
							if err := c.send(raw); err != nil {
								b.Error(err)
							}
						}()
					}
					wg.Wait()
				}
				b.StopTimer()
				b.ReportMetric(float64(benchdata.CPUTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
				b.ReportMetric(peak.MB(), "peak-MB")
				for _, c := range clients {
					c.c.Close()
				}
			})
		}
	}
}

// smtpClient sends one message at a time on one connection.
type smtpClient struct{ c *smtp.Client }

// send sends raw declaring its size, as MTAs do where SIZE is offered.
func (c *smtpClient) send(raw []byte) error {
	if err := c.c.Mail("a@b.test", &smtp.MailOptions{Size: int64(len(raw))}); err != nil {
		return err
	}
	if err := c.c.Rcpt("t@inbox.test", nil); err != nil {
		return err
	}
	w, err := c.c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(raw); err != nil {
		return err
	}
	return w.Close()
}
