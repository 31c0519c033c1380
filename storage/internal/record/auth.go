package record

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"burner/storage"
)

// An authentication record (spec §12) is encoded once for every engine,
// so that both read what `burner copy` moves between them as it is:
//
//	version(1) flags(1), then uvarint-prefixed: status, client address
//	(0, 4 or 16 octets), HELO name, MAIL FROM, TLS version, TLS cipher,
//	PTR name, SPF result, SPF domain; uvarint(number of DKIM results) and
//	for each: result, domain, selector, error; DMARC result, domain,
//	policy; the Authentication-Results value
//
// flags holds authTLS when the message came over STARTTLS, authFCrDNS,
// authSPFAligned and authDKIMAligned. A record is written pending at
// delivery, with its strings from the PTR name on empty, and rewritten
// whole when its verdicts are in.
const (
	authVersion     = 1
	authTLS         = 1 << 0
	authFCrDNS      = 1 << 1
	authSPFAligned  = 1 << 2
	authDKIMAligned = 1 << 3
)

// ErrCorruptAuth means an encoded authentication record is damaged. It
// wraps storage.ErrCorrupt, as the damage of any record does.
var ErrCorruptAuth = fmt.Errorf("%w: authentication record", storage.ErrCorrupt)

// EncodeAuth encodes an authentication record for an engine to store.
func EncodeAuth(r storage.AuthResult) []byte {
	var flags byte
	env := r.Envelope
	var tlsVersion, tlsCipher string
	if env.TLS != nil {
		flags |= authTLS
		tlsVersion, tlsCipher = env.TLS.Version, env.TLS.Cipher
	}
	if r.FCrDNS {
		flags |= authFCrDNS
	}
	if r.DMARC.SPFAligned {
		flags |= authSPFAligned
	}
	if r.DMARC.DKIMAligned {
		flags |= authDKIMAligned
	}
	n := 64 + len(env.Helo) + len(env.MailFrom) + len(r.PTR) + len(r.AuthenticationResults)
	b := append(make([]byte, 0, n), authVersion, flags)
	b = AppendString(b, r.Status)
	b = AppendString(b, env.ClientIP.AsSlice())
	b = AppendString(b, env.Helo)
	b = AppendString(b, env.MailFrom)
	b = AppendString(b, tlsVersion)
	b = AppendString(b, tlsCipher)
	b = AppendString(b, r.PTR)
	b = AppendString(b, r.SPF.Result)
	b = AppendString(b, r.SPF.Domain)
	b = binary.AppendUvarint(b, uint64(len(r.DKIM)))
	for _, d := range r.DKIM {
		b = AppendString(b, d.Result)
		b = AppendString(b, d.Domain)
		b = AppendString(b, d.Selector)
		b = AppendString(b, d.Error)
	}
	b = AppendString(b, r.DMARC.Result)
	b = AppendString(b, r.DMARC.Domain)
	b = AppendString(b, r.DMARC.Policy)
	return AppendString(b, r.AuthenticationResults)
}

// DecodeAuth decodes a record that EncodeAuth made, or returns
// ErrCorruptAuth.
func DecodeAuth(v []byte) (storage.AuthResult, error) {
	if len(v) < 2 || v[0] != authVersion {
		return storage.AuthResult{}, ErrCorruptAuth
	}
	flags, d := v[1], reader{b: v[2:]}
	var r storage.AuthResult
	r.Status = storage.AuthStatus(d.string())
	switch r.Status {
	case storage.AuthPending, storage.AuthDone, storage.AuthOff:
	default:
		return storage.AuthResult{}, ErrCorruptAuth
	}
	if ip := d.bytes(); len(ip) > 0 {
		addr, ok := netip.AddrFromSlice(ip)
		if !ok {
			return storage.AuthResult{}, ErrCorruptAuth
		}
		r.Envelope.ClientIP = addr
	}
	r.Envelope.Helo = d.string()
	r.Envelope.MailFrom = d.string()
	tlsVersion, tlsCipher := d.string(), d.string()
	if flags&authTLS != 0 {
		r.Envelope.TLS = &storage.TLS{Version: tlsVersion, Cipher: tlsCipher}
	}
	r.PTR = d.string()
	r.FCrDNS = flags&authFCrDNS != 0
	r.SPF = storage.SPFResult{Result: storage.AuthValue(d.string()), Domain: d.string()}
	// Each result takes four bytes at least: a count beyond that is
	// damage, not a reason to allocate.
	if n := d.count(4); n > 0 {
		r.DKIM = make([]storage.DKIMResult, n)
		for i := range r.DKIM {
			r.DKIM[i] = storage.DKIMResult{Result: storage.AuthValue(d.string()), Domain: d.string(), Selector: d.string(), Error: d.string()}
		}
	}
	r.DMARC = storage.DMARCResult{
		Result: storage.AuthValue(d.string()), Domain: d.string(), Policy: d.string(),
		SPFAligned: flags&authSPFAligned != 0, DKIMAligned: flags&authDKIMAligned != 0,
	}
	r.AuthenticationResults = d.string()
	if d.err != nil || len(d.b) != 0 {
		return storage.AuthResult{}, ErrCorruptAuth
	}
	return r, nil
}
