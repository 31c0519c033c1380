package record

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"testing"

	"burner/storage"
)

func TestAuthEncoding(t *testing.T) {
	full := storage.AuthResult{
		Status: storage.AuthDone,
		Envelope: storage.Envelope{
			ClientIP: netip.MustParseAddr("2001:db8::7"),
			Helo:     "mail.example.com",
			TLS:      &storage.TLS{Version: "TLS 1.3", Cipher: "TLS_AES_128_GCM_SHA256"},
			MailFrom: "bounce@example.com",
		},
		PTR:    "mail.example.com",
		FCrDNS: true,
		SPF:    storage.SPFResult{Result: storage.AuthPass, Domain: "example.com"},
		DKIM: []storage.DKIMResult{
			{Result: storage.AuthPass, Domain: "example.com", Selector: "s1"},
			{Result: storage.AuthFail, Domain: "ëxample.org", Selector: "s2", Error: "body hash did not verify"},
		},
		DMARC:                 storage.DMARCResult{Result: storage.AuthPass, Domain: "example.com", Policy: "reject", SPFAligned: true, DKIMAligned: true},
		AuthenticationResults: "mx.example.test; spf=pass smtp.mailfrom=example.com",
	}
	pending := storage.AuthResult{Status: storage.AuthPending, Envelope: storage.Envelope{ClientIP: netip.MustParseAddr("192.0.2.1"), Helo: "h"}}
	for _, r := range []storage.AuthResult{full, pending, {Status: storage.AuthOff}} {
		got, err := DecodeAuth(EncodeAuth(r))
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("DecodeAuth(EncodeAuth(%+v)) = %+v, %v", r, got, err)
		}
	}
	enc := EncodeAuth(full)
	// Every cut of a sound record is damage, never a panic or a short record.
	for n := range len(enc) {
		if _, err := DecodeAuth(enc[:n]); !errors.Is(err, ErrCorruptAuth) || !errors.Is(err, storage.ErrCorrupt) {
			t.Errorf("DecodeAuth(first %d of %d bytes) = %v, want ErrCorruptAuth", n, len(enc), err)
		}
	}
	if _, err := DecodeAuth(append(enc, 0)); !errors.Is(err, ErrCorruptAuth) {
		t.Errorf("DecodeAuth with a trailing byte = %v, want ErrCorruptAuth", err)
	}
	// Another version, a status that is none, an address of 5 octets.
	for _, bad := range [][]byte{
		append([]byte{authVersion + 1}, enc[1:]...),
		EncodeAuth(storage.AuthResult{Status: "maybe"}),
		{authVersion, 0, 4, 'd', 'o', 'n', 'e', 5, 1, 2, 3, 4, 5},
	} {
		if _, err := DecodeAuth(bad); !errors.Is(err, ErrCorruptAuth) {
			t.Errorf("DecodeAuth(%x) = %v, want ErrCorruptAuth", bad, err)
		}
	}
	// A count of DKIM results the record cannot hold is refused before allocating.
	huge := []byte{authVersion, 0, 3, 'o', 'f', 'f', 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}
	if _, err := DecodeAuth(huge); !errors.Is(err, ErrCorruptAuth) {
		t.Errorf("DecodeAuth of a huge count = %v, want ErrCorruptAuth", err)
	}
	got := fmt.Sprintf("%x", EncodeAuth(storage.AuthResult{Status: storage.AuthPending, Envelope: storage.Envelope{ClientIP: netip.MustParseAddr("127.0.0.1"), Helo: "h", TLS: &storage.TLS{}}}))
	if want := "0101" + "0770656e64696e67" + "047f000001" + "0168" + "00" + "0000" + "00" + "0000" + "00" + "000000" + "00"; got != want {
		t.Errorf("EncodeAuth = %s, want %s (the documented layout)", got, want)
	}
}
