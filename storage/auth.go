package storage

import "net/netip"

// Envelope is what the receiving MX saw of one message's delivery, recorded
// when the message is accepted (spec §12): who connected, over what, and
// the reverse-path it gave.
type Envelope struct {
	ClientIP netip.Addr // the SMTP client's address; the zero Addr when unknown
	Helo     string     // the HELO/EHLO name, as the client gave it
	TLS      *TLS       // nil when the message came without STARTTLS
	MailFrom string     // the MAIL FROM reverse-path, "" for <>
}

// TLS is the channel a message or a session came over after STARTTLS,
// named as crypto/tls names it (tls.VersionName, tls.CipherSuiteName).
type TLS struct {
	Version string // "TLS 1.3"
	Cipher  string // "TLS_AES_128_GCM_SHA256"
}

// AuthStatus says whether a message's verdicts are in (spec §12).
type AuthStatus string

const (
	AuthPending AuthStatus = "pending" // accepted; the verdicts are not computed yet
	AuthDone    AuthStatus = "done"    // every verdict is in
	AuthOff     AuthStatus = "off"     // auth.verify = false: only the envelope is kept
)

// AuthValue is a result word of RFC 8601. SPF uses all seven; DKIM all but
// softfail and none (an unsigned message has no DKIM entry); DMARC none
// (no record), pass, fail, temperror and permerror.
type AuthValue string

const (
	AuthNone      AuthValue = "none"
	AuthPass      AuthValue = "pass"
	AuthFail      AuthValue = "fail"
	AuthSoftFail  AuthValue = "softfail"
	AuthNeutral   AuthValue = "neutral"
	AuthTempError AuthValue = "temperror" // a lookup got no answer in time: a later try may decide
	AuthPermError AuthValue = "permerror" // a broken record or signature: a later try will not decide
)

// AuthResult is what the receiving MX made of one message (spec §12): the
// envelope recorded at delivery and the verdicts computed after the commit.
// There is one per message, shared by its per-recipient copies. While
// Status is AuthPending or AuthOff only Envelope is set.
type AuthResult struct {
	Status   AuthStatus
	Envelope Envelope
	// PTR is the client's name in reverse DNS, without the trailing dot:
	// the one that resolves back to ClientIP when one does, else the first.
	// It is "" when the address has no PTR record (or none could be read).
	PTR    string
	FCrDNS bool // PTR resolves back to Envelope.ClientIP
	SPF    SPFResult
	DKIM   []DKIMResult // one per DKIM-Signature field, in header order; empty when unsigned
	DMARC  DMARCResult
	// AuthenticationResults is the RFC 8601 header value of the verdicts,
	// its authserv-id smtp.hostname; it is not written into the message.
	AuthenticationResults string
}

// SPFResult is the SPF verdict (RFC 7208) on the client's address.
type SPFResult struct {
	Result AuthValue
	Domain string // the domain checked: MAIL FROM's, or the HELO name for <>
}

// DKIMResult is the verdict on one DKIM-Signature field (RFC 6376). A
// signature whose body hash or signature does not verify is AuthFail.
type DKIMResult struct {
	Result   AuthValue
	Domain   string // its d= tag
	Selector string // its s= tag
	Error    string // why it did not pass; "" when it passed
}

// DMARCResult is the DMARC verdict (RFC 7489) on the From header's domain.
type DMARCResult struct {
	Result AuthValue
	Domain string // the From header's domain; "" when the message has none
	// Policy is what the record asks of failing mail, "none", "quarantine"
	// or "reject" (sp= for a subdomain when the organizational domain's
	// record has it); "" when no record was found.
	Policy string
	// SPFAligned and DKIMAligned say that SPF passed, or a DKIM signature
	// passed, for a domain aligned with the From domain in the record's
	// mode (aspf, adkim; relaxed without a record).
	SPFAligned  bool
	DKIMAligned bool
}
