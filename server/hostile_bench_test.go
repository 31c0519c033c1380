package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"burner/internal/benchdata"
	"burner/storage"
)

// hostileMessage is the largest email a message within max_message_bytes
// can leave after smtpd's body cap (1 MiB): a body of 1 MiB of "&amp;"
// (every byte of it escaped nowhere but in HTML), as much text and plain
// text, a thousand links, a hundred header fields, and the 10 MB source.
func hostileMessage() *storage.Message {
	const cap = 1 << 20
	body := "<p>" + strings.Repeat("&amp;", (cap-200)/5) + "</p>" + storage.CutMark
	text := strings.Repeat("& ", cap/2)
	links := make([]string, 1000)
	for i := range links {
		links[i] = fmt.Sprintf("https://e.x/%d", i)
	}
	headers := make([]storage.Header, 100)
	for i := range headers {
		headers[i] = storage.Header{Name: fmt.Sprintf("X-H%d", i), Value: "café"}
	}
	raw := "From: a@b.test\r\nSubject: hostile\r\n\r\n" + strings.Repeat(strings.Repeat("&", 1990)+"\r\n", (10<<20-4096)/1992)
	return &storage.Message{
		From: "a@b.test", Subject: ptr("hostile"), Body: &body, Text: text, Plain: text + storage.CutText,
		Links: links, Headers: headers, Raw: []byte(raw),
	}
}

// BenchmarkHostileRequests serves every route that reads an email from an
// inbox of ten of the largest emails a message can leave (hostileMessage),
// through the real handler over a real data file, and reports the CPU of
// the process per request (cpu-ms/op) and the peak of its resident memory
// above what it held before (peak-MB). The UI is public, so that its pages
// need no login.
func BenchmarkHostileRequests(b *testing.B) {
	db := openDB(b)
	_, key, err := db.CreateKey(context.Background(), "bench", storage.Scope{})
	if err != nil {
		b.Fatal(err)
	}
	var id string
	for range 10 {
		es, err := db.Deliver(context.Background(), hostileMessage(), []string{"victim@example.com"})
		if err != nil {
			b.Fatal(err)
		}
		id = es[0].ID
	}
	h := New(db, Options{UI: true, Public: true}, slog.New(slog.DiscardHandler)).Handler()
	for _, route := range []string{
		"/api/v1/emails?to=victim&limit=10",
		"/api/v1/emails?to=victim&body=nowhere",
		"/api/v1/emails?to=victim&search=nowhere%20else",
		"/api/v1/emails/" + id,
		"/api/v1/emails/" + id + "/raw",
		"/api/v1/emails/" + id + "/text",
		"/api/v1/emails/" + id + "/links",
		"/api/v1/emails/" + id + "/attachments",
		"/inbox/victim",
		"/email/" + id,
		"/email/" + id + "/raw",
	} {
		b.Run(strings.TrimPrefix(strings.ReplaceAll(route, "/"+id, "/ID"), "/"), func(b *testing.B) {
			get := func() int {
				req := httptest.NewRequest("GET", route, nil)
				req.Header.Set("Authorization", "Bearer "+key)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				return rec.Code
			}
			if code := get(); code != http.StatusOK {
				b.Fatalf("GET %s = %d", route, code)
			}
			peak := benchdata.StartPeak(b)
			cpu := benchdata.CPUTime()
			b.ResetTimer()
			for b.Loop() {
				get()
			}
			b.StopTimer()
			b.ReportMetric(float64(benchdata.CPUTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
			b.ReportMetric(peak.MB(), "peak-MB")
		})
	}
}
