package mailauth

import (
	"strings"

	"burner/storage"

	"github.com/emersion/go-msgauth/authres"
)

// formatResults returns the Authentication-Results value (RFC 8601) of r
// with hostname as its authserv-id: spf, one dkim per signature (dkim=none
// for an unsigned message), dmarc, each with its reason when it has one.
// spfWhy and dmarcWhy are the reasons of SPF and DMARC.
func formatResults(hostname string, env storage.Envelope, r storage.AuthResult, spfWhy, dmarcWhy string) string {
	results := make([]authres.Result, 0, 2+max(1, len(r.DKIM)))
	spf := &authres.SPFResult{Value: authres.ResultValue(r.SPF.Result), Reason: spfWhy}
	if domainOf(env.MailFrom) != "" {
		spf.From = r.SPF.Domain
	} else {
		spf.Helo = r.SPF.Domain
	}
	results = append(results, spf)
	for _, d := range r.DKIM {
		results = append(results, &authres.GenericResult{Method: "dkim", Value: authres.ResultValue(d.Result), Params: map[string]string{
			"reason":   d.Error,
			"header.d": d.Domain,
			"header.s": d.Selector, // authres.DKIMResult has no header.s, hence the generic result
		}})
	}
	if len(r.DKIM) == 0 {
		results = append(results, &authres.GenericResult{Method: "dkim", Value: authres.ResultNone})
	}
	results = append(results, &authres.DMARCResult{Value: authres.ResultValue(r.DMARC.Result), Reason: dmarcWhy, From: r.DMARC.Domain})

	// One result at a time: authres.Format leaves a space before the next
	// ";" after a result without parameters.
	var b strings.Builder
	b.WriteString(hostname)
	for _, res := range results {
		b.WriteString(strings.TrimRight(authres.Format("", []authres.Result{res}), " "))
	}
	return b.String()
}
