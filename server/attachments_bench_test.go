package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"burner/message"
	"burner/storage"
)

// tinyParts returns a message of about n parts of one byte each, a shape
// of docs/hostile-mail.md (217,000 of them fit in 10 MiB with short
// headers).
func tinyParts(n int) []byte {
	var b bytes.Buffer
	b.WriteString("Subject: tiny\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n")
	for range n {
		b.WriteString("--b\r\nContent-Type: a/b\r\n\r\nx\r\n")
	}
	b.WriteString("--b--\r\n")
	return b.Bytes()
}

// bigFile returns a message of one base64 file of size bytes, random so
// that storage cannot compress it away.
func bigFile(size int) []byte {
	data := make([]byte, size)
	r := rand.NewChaCha8([32]byte{})
	r.Read(data)
	enc := base64.StdEncoding.EncodeToString(data)
	var b strings.Builder
	b.WriteString("Subject: big\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n")
	b.WriteString("--b\r\nContent-Type: application/octet-stream; name=big.bin\r\nContent-Transfer-Encoding: base64\r\n\r\n")
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	b.WriteString(enc + "\r\n--b--\r\n")
	return []byte(b.String())
}

// BenchmarkAttachments measures, for each pathological shape, the costs
// docs/hostile-mail.md weighs: computing the list on first use (reading the source, walking
// it, storing the list), the walk alone, listing when the list is stored,
// and serving one file (the last listed, the farthest walk), through the
// HTTP handler.
func BenchmarkAttachments(b *testing.B) {
	for _, shape := range []struct {
		name string
		raw  []byte
		n    int // the file to serve
	}{
		{"tiny-parts-200k", tinyParts(200_000), message.MaxListedFiles - 1},
		{"one-10MB-file", bigFile(7 << 20), 0}, // 7 MiB in base64 is 9.6 MB of message
	} {
		db := openDB(b)
		_, key, err := db.CreateKey(context.Background(), "bench", storage.Scope{})
		if err != nil {
			b.Fatal(err)
		}
		es, err := db.Deliver(context.Background(), &storage.Message{Raw: shape.raw}, []string{"alice@example.com"})
		if err != nil {
			b.Fatal(err)
		}
		s := New(db, Options{}, slog.New(slog.DiscardHandler))
		h := s.Handler()
		get := func(b *testing.B, path string) int {
			req := httptest.NewRequest("GET", path, nil)
			req.Header.Set("Authorization", "Bearer "+key)
			rec := &countingWriter{header: http.Header{}}
			h.ServeHTTP(rec, req)
			if rec.status != http.StatusOK {
				b.Fatalf("GET %s = %d", path, rec.status)
			}
			return rec.n
		}
		id := es[0].ID
		b.Run(shape.name+"/first-list", func(b *testing.B) {
			b.ReportAllocs()
			ctx := withScope(context.Background(), storage.Scope{}) // every inbox, as an unscoped key
			for b.Loop() {
				// A list of other rules is as good as none: this one is
				// computed again and stored.
				b.StopTimer()
				if err := db.PutAttachments(ctx, id, storage.Attachments{Rules: message.AttachmentRules - 1}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := s.attachmentList(ctx, id); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(shape.name+"/walk", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				message.Attachments(shape.raw)
			}
		})
		b.Run(shape.name+"/list", func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for b.Loop() {
				n = get(b, "/api/v1/emails/"+id+"/attachments")
			}
			b.ReportMetric(float64(n), "resp-bytes")
		})
		b.Run(shape.name+"/serve-one", func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for b.Loop() {
				n = get(b, fmt.Sprintf("/api/v1/emails/%s/attachments/%d", id, shape.n))
			}
			b.ReportMetric(float64(n), "resp-bytes")
		})
	}
}

// countingWriter is a ResponseWriter that counts the body and keeps none
// of it, so that a benchmark measures the handler, not a recorder.
type countingWriter struct {
	header http.Header
	status int
	n      int
}

func (w *countingWriter) Header() http.Header { return w.header }

func (w *countingWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.n += len(p)
	return len(p), nil
}
