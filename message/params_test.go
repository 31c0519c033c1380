package message

import (
	"maps"
	"testing"
)

func TestParseMediaType(t *testing.T) {
	tests := []struct {
		in     string
		typ    string
		params map[string]string
		ok     bool
	}{
		{"text/plain", "text/plain", nil, true},
		{"TEXT/HTML; CHARSET=UTF-8", "text/html", map[string]string{"charset": "UTF-8"}, true},
		{`multipart/mixed; boundary="a;b \"c\""`, "multipart/mixed", map[string]string{"boundary": `a;b "c"`}, true},
		{"text/plain; charset=us-ascii (Plain text)", "text/plain", map[string]string{"charset": "us-ascii"}, true},
		{"text/plain (a comment); charset = \"iso-8859-1\" ", "text/plain", map[string]string{"charset": "iso-8859-1"}, true},
		{"text/html; charset=utf-8; charset=latin1", "text/html", map[string]string{"charset": "utf-8"}, true},
		{"text/plain; ; junk; charset=utf-8", "text/plain", map[string]string{"charset": "utf-8"}, true},
		// RFC 2231, in charsets Go's mime package does not decode.
		{"multipart/mixed; boundary*=iso-8859-1''XYZ", "multipart/mixed", map[string]string{"boundary": "XYZ"}, true},
		{"multipart/mixed; boundary*=ansi-x3.4-1968'en'%3D_p%3D", "multipart/mixed", map[string]string{"boundary": "=_p="}, true},
		{"multipart/mixed; boundary*0*=utf-8''b1%5F; boundary*1=\"two\"; boundary*2*=%5Fend", "multipart/mixed", map[string]string{"boundary": "b1_two_end"}, true},
		{"application/pdf; name=old.pdf; name*=iso-8859-1''R%E9sum%E9.pdf", "application/pdf", map[string]string{"name": "Résumé.pdf"}, true},
		{"application/pdf; name*1*=%E9.pdf; name*0*=windows-1252''R%E9sum", "application/pdf", map[string]string{"name": "Résumé.pdf"}, true},
		{"application/pdf; name*0*=x-unknown''caf%C3%A9", "application/pdf", map[string]string{"name": "café"}, true},
		{"text/plain; charset*=us-ascii'en'iso-8859-2", "text/plain", map[string]string{"charset": "iso-8859-2"}, true},
		{"text/plain; title*=us-ascii'en-us'This%20is%20%2A%2A%2Afun%2A%2A%2A", "text/plain", map[string]string{"title": "This is ***fun***"}, true},
		{"garbage", "", nil, false},
		{"text/", "", nil, false},
		{"text/plain/x", "", nil, false},
		{"", "", nil, false},
	}
	for _, tt := range tests {
		typ, params, ok := parseMediaType(tt.in)
		if typ != tt.typ || !maps.Equal(params, tt.params) || ok != tt.ok {
			t.Errorf("parseMediaType(%q) = %q, %q, %v, want %q, %q, %v", tt.in, typ, params, ok, tt.typ, tt.params, tt.ok)
		}
	}
}

// TestParseDisposition checks that a Content-Disposition's parameters are
// read as a Content-Type's are, RFC 2231 and all.
func TestParseDisposition(t *testing.T) {
	for _, tt := range []struct {
		in     string
		disp   string
		params map[string]string
	}{
		{"", "", nil},
		{"inline", "inline", nil},
		{`ATTACHMENT; filename="a b.pdf"`, "attachment", map[string]string{"filename": "a b.pdf"}},
		{"attachment (a comment); filename*=UTF-8''r%C3%A9sum%C3%A9.txt", "attachment", map[string]string{"filename": "résumé.txt"}},
		{"attachment; filename*0=\"long\"; filename*1=\".txt\"", "attachment", map[string]string{"filename": "long.txt"}},
	} {
		disp, params := parseDisposition(tt.in)
		if disp != tt.disp || !maps.Equal(params, tt.params) {
			t.Errorf("parseDisposition(%q) = %q, %q; want %q, %q", tt.in, disp, params, tt.disp, tt.params)
		}
	}
}
