package message

import (
	"net/url"
	"regexp"

	"github.com/microcosm-cc/bluemonday"
)

// newPolicy returns the policy every body goes through, whether it came as
// HTML or was made from plain text. It starts from UGCPolicy, which already
// drops script, style, forms, iframe, object, embed, meta, base, link, event
// handler attributes and every URL scheme but http, https and mailto, and
// adds what email HTML needs to look as its sender meant.
func newPolicy() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()

	// A message has no base URL: a relative link or image would resolve
	// against burner's own origin and reach its API with the reader's
	// credentials.
	p.AllowRelativeURLs(false)
	// "https:api/v1/inbox" has a scheme, so it is not relative to Go's
	// url.Parse, but browsers resolve an http(s) URL without "//" against
	// the base URL of the same scheme (WHATWG URL, "special relative or
	// authority state"): it is a relative URL all the same. Only URLs that
	// name a host leave burner.
	p.AllowURLSchemeWithCustomPolicy("http", hasHost)
	p.AllowURLSchemeWithCustomPolicy("https", hasHost)
	// cid: names an image inside the same message (RFC 2392); it loads
	// nothing from outside and runs nothing.
	p.AllowURLSchemes("cid")
	// Links leave burner in a new tab that cannot script the tab it came from.
	p.AddTargetBlankToFullyQualifiedLinks(true)

	// Email is laid out with inline styles, since clients strip <style>.
	// They pass here unchecked and render filters them (style.go), which
	// is much cheaper than bluemonday's AllowStyles; nothing may use this
	// policy without render.
	p.AllowAttrs("style").Globally()

	// The presentational attributes of table-based email layouts.
	color := regexp.MustCompile(`(?i)^(#[0-9a-f]{3,8}|[a-z]{3,20})$`)
	p.AllowAttrs("bgcolor").Matching(color).OnElements("table", "tr", "td", "th")
	p.AllowAttrs("border", "cellpadding", "cellspacing").Matching(bluemonday.Integer).OnElements("table")
	p.AllowAttrs("align").Matching(bluemonday.CellAlign).OnElements("table", "div", "p", "h1", "h2", "h3", "h4", "h5", "h6")
	p.AllowElements("center")
	p.AllowAttrs("color").Matching(color).OnElements("font")
	p.AllowAttrs("face").Matching(regexp.MustCompile(`^[\p{L}\p{N}\s,'"-]{1,100}$`)).OnElements("font")
	p.AllowAttrs("size").Matching(regexp.MustCompile(`^[+-]?[1-7]$`)).OnElements("font")
	return p
}

// hasHost reports whether u names a host, as an absolute http(s) URL does.
func hasHost(u *url.URL) bool { return u.Host != "" }
