package smtpd

import (
	"context"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"burner/internal/benchdata"
	"burner/storage"
)

// BenchmarkDeliverPath is what the daemon does with a message once its
// data is read, without the SMTP wire: the Received field, the parse
// (message.Parse: MIME, sanitizing, text and links) and the delivery
// (encoding, signature, the group commit and its fsync) into a real bbolt
// file, with the record of its SMTP session (spec §13.1) and its pending
// authentication verdict (spec §12) in the same commit, as serve's
// defaults have them, from 8 goroutines as 8 SMTP sessions would. The
// verification itself runs after the 250, in mailauth's pool, and is not
// counted. b.N counts messages:
// realistic 4 KB newsletters to 100 inboxes. Besides time and allocations
// per message it reports cpu-µs/msg, the process's user and system CPU per
// message (the fsyncs' included), the figure BenchmarkIngest reports for
// the whole daemon; what lies between the two is the wire's.
//
// A change to parsing, encoding or committing shows here first, and with
// less noise than over SMTP:
//
//	go test -run '^$' -bench DeliverPath -benchtime 4000x -count 10 ./smtpd
func BenchmarkDeliverPath(b *testing.B) {
	mails := benchMails(1000, 100)
	db := openDB(b)
	srv := New(db, Options{}, slog.New(slog.DiscardHandler))
	received := []byte("Received: from loadgen.test ([127.0.0.1])\r\n\tby localhost (burner) with ESMTP id 01HZX4N5V3Q0R7KQ2W0T8B4M9C\r\n\tfor <")
	// Warm the pools and the file, as a daemon that has been running is.
	for i, m := range mails[:16] {
		deliverOne(b, srv, received, m, i)
	}
	var next atomic.Int64
	next.Store(16)
	b.SetParallelism(4) // 8 goroutines on 2 cores: BenchmarkIngest's 8 connections
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchdata.CPUTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1))
			deliverOne(b, srv, received, mails[i%len(mails)], i)
		}
	})
	cpu = benchdata.CPUTime() - cpu
	b.StopTimer()
	b.ReportMetric(float64(cpu)/1e3/float64(b.N), "cpu-µs/msg")
}

// deliverOne stores m as Data does once the data is read: the Received
// field and the data in one buffer, parsed, delivered with the i-th
// session's record and a pending verdict.
func deliverOne(b *testing.B, srv *Server, received []byte, m benchMail, i int) {
	raw := make([]byte, 0, len(received)+len(m.to)+64+len(m.data))
	raw = append(append(append(raw, received...), m.to...), ">;\r\n\t"...)
	raw = time.Now().AppendFormat(raw, time.RFC1123Z)
	raw = append(append(raw, "\r\n"...), m.data...)
	msg, _ := srv.parser.Parse(raw, "loadgen@sender.test")
	rec := benchdata.DeliveredSession(i, time.Now(), m.to)
	msg.Session = &rec
	msg.Auth = &storage.AuthResult{Status: storage.AuthPending,
		Envelope: storage.Envelope{Helo: "loadgen.test", MailFrom: "loadgen@sender.test", ClientIP: netip.MustParseAddr("127.0.0.1")}}
	if _, err := srv.db.Deliver(context.Background(), &msg, []string{m.to}); err != nil {
		b.Error(err)
	}
}
