package mailauth

import (
	"context"
	"errors"
	"strings"

	"burner/storage"

	"github.com/emersion/go-msgauth/dmarc"
	"golang.org/x/net/publicsuffix"
)

// dmarcLookup is what the search for the From domain's DMARC record found.
type dmarcLookup struct {
	rec *dmarc.Record // nil when none was found
	// sub says the record is the organizational domain's, found for a
	// subdomain: its sp= applies (RFC 7489 §6.6.3).
	sub    bool
	result storage.AuthValue // without a record: none, temperror or permerror
	reason string            // why, for temperror and permerror
}

// lookupDMARC finds the DMARC record of the From domain, or else of its
// organizational domain (RFC 7489 §6.6.3).
func (v *Verifier) lookupDMARC(ctx context.Context, from string) dmarcLookup {
	l := v.dmarcRecord(ctx, from)
	if l.rec == nil && l.result == storage.AuthNone {
		if org := orgDomain(from); org != from {
			l = v.dmarcRecord(ctx, org)
			l.sub = l.rec != nil
		}
	}
	return l
}

func (v *Verifier) dmarcRecord(ctx context.Context, domain string) dmarcLookup {
	rec, err := dmarc.LookupWithOptions(domain, &dmarc.LookupOptions{
		LookupTXT: func(name string) ([]string, error) { return v.res.LookupTXT(ctx, name) },
	})
	switch {
	case err == nil:
		return dmarcLookup{rec: rec}
	case errors.Is(err, dmarc.ErrNoPolicy):
		return dmarcLookup{result: storage.AuthNone}
	case dmarc.IsTempFail(err):
		return dmarcLookup{result: storage.AuthTempError, reason: strings.TrimPrefix(err.Error(), "dmarc: ")}
	default: // a record that does not parse
		return dmarcLookup{result: storage.AuthPermError, reason: strings.TrimPrefix(err.Error(), "dmarc: ")}
	}
}

// evaluateDMARC weighs SPF and DKIM against the From domain's record (RFC
// 7489 §3.1, §4.2): pass when SPF or a DKIM signature passed for a domain
// aligned with from, in the record's aspf and adkim modes. When neither
// did but one that might on a later try was temperror, the result is
// temperror rather than fail. Without a record the alignment is still
// reported, in relaxed mode. It returns why the result is an error.
func evaluateDMARC(from string, l dmarcLookup, spf storage.SPFResult, dkims []storage.DKIMResult) (storage.DMARCResult, string) {
	res := storage.DMARCResult{Domain: from}
	if from == "" {
		res.Result = l.result
		return res, l.reason
	}
	spfMode, dkimMode := dmarc.AlignmentMode(dmarc.AlignmentRelaxed), dmarc.AlignmentMode(dmarc.AlignmentRelaxed)
	if l.rec != nil {
		spfMode, dkimMode = l.rec.SPFAlignment, l.rec.DKIMAlignment
		res.Policy = string(l.rec.Policy)
		if l.sub && l.rec.SubdomainPolicy != "" {
			res.Policy = string(l.rec.SubdomainPolicy)
		}
	}
	spfAligned := aligned(spf.Domain, from, spfMode)
	res.SPFAligned = spf.Result == storage.AuthPass && spfAligned
	pending := spf.Result == storage.AuthTempError && spfAligned
	for _, d := range dkims {
		if !aligned(d.Domain, from, dkimMode) {
			continue
		}
		switch d.Result {
		case storage.AuthPass:
			res.DKIMAligned = true
		case storage.AuthTempError:
			pending = true
		}
	}
	switch {
	case l.rec == nil:
		res.Result = l.result
		return res, l.reason
	case res.SPFAligned || res.DKIMAligned:
		res.Result = storage.AuthPass
	case pending:
		res.Result = storage.AuthTempError
		return res, "SPF or DKIM temperror"
	default:
		res.Result = storage.AuthFail
	}
	return res, ""
}

// aligned reports whether the authenticated domain d is aligned with the
// From domain from: the same name in strict mode, the same organizational
// domain in relaxed mode (RFC 7489 §3.1).
func aligned(d, from string, mode dmarc.AlignmentMode) bool {
	d, from = strings.ToLower(d), strings.ToLower(from)
	if d == "" || from == "" {
		return false
	}
	if mode == dmarc.AlignmentStrict {
		return d == from
	}
	return orgDomain(d) == orgDomain(from)
}

// orgDomain returns the organizational domain of d (RFC 7489 §3.2): the
// public suffix and one label more, by the Public Suffix List; d itself
// when it is a public suffix or not a domain name.
func orgDomain(d string) string {
	org, err := publicsuffix.EffectiveTLDPlusOne(d)
	if err != nil {
		return d
	}
	return org
}
