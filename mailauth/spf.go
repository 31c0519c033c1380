package mailauth

import (
	"context"
	"net"
	"strings"

	"burner/storage"

	"blitiri.com.ar/go/spf"
	"github.com/miekg/dns"
)

// checkSPF evaluates SPF (RFC 7208) for the client's address and the MAIL
// FROM domain, or the HELO name when MAIL FROM is <> (§2.4: the sender is
// then postmaster@HELO). It returns why the result is an error, if it is.
func (v *Verifier) checkSPF(ctx context.Context, env storage.Envelope) (storage.SPFResult, string) {
	domain := spfDomain(env)
	res := storage.SPFResult{Result: storage.AuthNone, Domain: domain}
	// §4.3: a malformed or single-label domain is "none", asked of no one.
	if !validDomain(domain) {
		return res, ""
	}
	if !env.ClientIP.IsValid() {
		res.Result = storage.AuthPermError
		return res, "client address unknown"
	}
	sender := env.MailFrom
	if domainOf(sender) == "" {
		sender = "postmaster@" + domain
	}
	ip := net.IP(env.ClientIP.Unmap().AsSlice())
	r, err := spf.CheckHostWithSender(ip, heloName(env.Helo), sender,
		spf.WithContext(ctx), spf.WithResolver(v.res),
		spf.OverrideLookupLimit(maxLookups), spf.OverrideVoidLookupLimit(maxVoidLookups))
	res.Result = storage.AuthValue(r)
	if (r == spf.TempError || r == spf.PermError) && err != nil {
		return res, err.Error()
	}
	return res, ""
}

// spfDomain returns the domain SPF checks for env: MAIL FROM's, or the
// HELO name for <>.
func spfDomain(env storage.Envelope) string {
	if d := domainOf(env.MailFrom); d != "" {
		return d
	}
	return heloName(env.Helo)
}

// heloName returns the HELO/EHLO name as a domain, "" for an address
// literal ("[192.0.2.1]"), which SPF does not check (RFC 7208 §2.3).
func heloName(helo string) string {
	helo = strings.TrimSpace(helo)
	if strings.HasPrefix(helo, "[") {
		return ""
	}
	return strings.ToLower(strings.TrimSuffix(helo, "."))
}

// validDomain reports whether d is a domain name SPF can check: at least
// two labels, none empty, each at most 63 octets (RFC 7208 §4.3).
func validDomain(d string) bool {
	if !strings.Contains(d, ".") || strings.HasSuffix(d, ".") {
		return false
	}
	for _, l := range strings.Split(d, ".") {
		if l == "" {
			return false
		}
	}
	_, ok := dns.IsDomainName(d)
	return ok
}
