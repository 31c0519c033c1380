package message

import (
	"net/url"
	"regexp"

	"github.com/microcosm-cc/bluemonday"
)

// The policy every body goes through, whether it came as HTML or was made
// from plain text, is written here as data: newPolicy builds bluemonday's
// Policy from it, and the fast sanitizer (fastsanitize.go) reads the same
// rules, so that the two share one definition of what is allowed.
//
// It is bluemonday's UGCPolicy, which already drops script, style, forms,
// iframe, object, embed, meta, base, link, event handler attributes and
// every URL scheme but http, https and mailto, with what email HTML needs
// to look as its sender meant. TestPolicyIsUGCAndEmail holds it to
// UGCPolicy with those additions.

// attrRule allows the attributes attrs, with values that match (nil: any
// value), on the elements on (none: on every element).
type attrRule struct {
	attrs []string
	match *regexp.Regexp
	on    []string
}

var (
	// bareElements are allowed with no attributes of their own.
	bareElements = []string{"article", "aside", "figure", "section", "summary", "h1", "h2", "h3", "h4", "h5", "h6",
		"hgroup", "br", "div", "hr", "p", "span", "wbr", "abbr", "acronym", "cite", "code", "dfn", "em", "figcaption",
		"mark", "s", "samp", "strong", "sub", "sup", "var", "b", "i", "pre", "small", "strike", "tt", "u", "rp", "rt",
		"ruby", "dl", "dt", "dd", "caption",
		// Centering, in the table layouts of email.
		"center"}

	// emailColor is a presentational color: #rgb to #rrggbbaa, or a name.
	emailColor = regexp.MustCompile(`(?i)^(#[0-9a-f]{3,8}|[a-z]{3,20})$`)

	attrRules = []attrRule{
		// Every element.
		{[]string{"dir"}, bluemonday.Direction, nil},
		{[]string{"lang"}, regexp.MustCompile(`[a-zA-Z]{2,20}`), nil},
		{[]string{"id"}, regexp.MustCompile(`[a-zA-Z0-9\:\-_\.]+`), nil},
		{[]string{"title"}, bluemonday.Paragraph, nil},
		// Email is laid out with inline styles, since clients strip
		// <style>. They pass here unchecked and render filters them
		// (style.go), which is much cheaper than bluemonday's
		// AllowStyles; nothing may use this policy without render.
		{[]string{"style"}, nil, nil},

		// Text and its semantics.
		{[]string{"open"}, regexp.MustCompile(`(?i)^(|open)$`), []string{"details"}},
		{[]string{"cite"}, nil, []string{"blockquote", "q"}},
		{[]string{"datetime"}, bluemonday.ISO8601, []string{"time"}},
		{[]string{"dir"}, bluemonday.Direction, []string{"bdi", "bdo"}},
		{[]string{"cite"}, bluemonday.Paragraph, []string{"del", "ins"}},
		{[]string{"datetime"}, bluemonday.ISO8601, []string{"del", "ins"}},
		{[]string{"value", "min", "max", "low", "high", "optimum"}, bluemonday.Number, []string{"meter"}},
		{[]string{"value", "max"}, bluemonday.Number, []string{"progress"}},

		// Links and image maps.
		{[]string{"href"}, nil, []string{"a", "area"}},
		{[]string{"name"}, regexp.MustCompile(`^([\p{L}\p{N}_-]+)$`), []string{"map"}},
		{[]string{"alt"}, bluemonday.Paragraph, []string{"area"}},
		{[]string{"coords"}, regexp.MustCompile(`^([0-9]+,)+[0-9]+$`), []string{"area"}},
		{[]string{"rel"}, bluemonday.SpaceSeparatedTokens, []string{"area"}},
		{[]string{"shape"}, regexp.MustCompile(`(?i)^(default|circle|rect|poly)$`), []string{"area"}},
		{[]string{"usemap"}, regexp.MustCompile(`(?i)^#[\p{L}\p{N}_-]+$`), []string{"img"}},

		// Lists.
		{[]string{"type"}, bluemonday.ListType, []string{"ol", "ul", "li"}},
		{[]string{"value"}, bluemonday.Integer, []string{"li"}},

		// Tables.
		{[]string{"height", "width"}, bluemonday.NumberOrPercent, []string{"table", "col", "colgroup", "td", "th"}},
		{[]string{"summary"}, bluemonday.Paragraph, []string{"table"}},
		{[]string{"align"}, bluemonday.CellAlign, []string{"col", "colgroup", "thead", "tr", "td", "th", "tbody", "tfoot"}},
		{[]string{"span"}, bluemonday.Integer, []string{"colgroup", "col"}},
		{[]string{"valign"}, bluemonday.CellVerticalAlign, []string{"col", "colgroup", "thead", "tr", "td", "th", "tbody", "tfoot"}},
		{[]string{"abbr"}, bluemonday.Paragraph, []string{"td", "th"}},
		{[]string{"colspan", "rowspan"}, bluemonday.Integer, []string{"td", "th"}},
		{[]string{"headers"}, bluemonday.SpaceSeparatedTokens, []string{"td", "th"}},
		{[]string{"scope"}, regexp.MustCompile(`(?i)(?:row|col)(?:group)?`), []string{"td", "th"}},
		{[]string{"nowrap"}, regexp.MustCompile(`(?i)|nowrap`), []string{"td", "th"}},

		// Images.
		{[]string{"align"}, bluemonday.ImageAlign, []string{"img"}},
		{[]string{"alt"}, bluemonday.Paragraph, []string{"img"}},
		{[]string{"height", "width"}, bluemonday.NumberOrPercent, []string{"img"}},
		{[]string{"src"}, nil, []string{"img"}},

		// The presentational attributes of table-based email layouts.
		{[]string{"bgcolor"}, emailColor, []string{"table", "tr", "td", "th"}},
		{[]string{"border", "cellpadding", "cellspacing"}, bluemonday.Integer, []string{"table"}},
		{[]string{"align"}, bluemonday.CellAlign, []string{"table", "div", "p", "h1", "h2", "h3", "h4", "h5", "h6"}},
		{[]string{"color"}, emailColor, []string{"font"}},
		{[]string{"face"}, regexp.MustCompile(`^[\p{L}\p{N}\s,'"-]{1,100}$`), []string{"font"}},
		{[]string{"size"}, regexp.MustCompile(`^[+-]?[1-7]$`), []string{"font"}},
	}

	// urlSchemes are the schemes a URL attribute may have, each with the
	// checks its URLs must pass. A message has no base URL, so no URL may
	// be relative: one would resolve against burner's own origin and
	// reach its API with the reader's credentials. And "https:api/v1/inbox"
	// has a scheme, so it is not relative to Go's url.Parse, but browsers
	// resolve an http(s) URL without "//" against the base URL of the same
	// scheme (WHATWG URL, "special relative or authority state"): only URLs
	// that name a host leave burner. cid: names an image inside the same
	// message (RFC 2392); it loads nothing from outside and runs nothing.
	urlSchemes = map[string][]func(*url.URL) bool{
		"http": {hasHost}, "https": {hasHost}, "mailto": nil, "cid": nil,
	}
)

// The link settings: links get rel="nofollow", and those that leave burner
// open in a new tab that cannot script the tab they came from.
const (
	requireNoFollow   = true
	targetBlankLinks  = true
	allowRelativeURLs = false
)

// newPolicy returns bluemonday's Policy of the rules above.
func newPolicy() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.RequireParseableURLs(true)
	p.AllowRelativeURLs(allowRelativeURLs)
	p.RequireNoFollowOnLinks(requireNoFollow)
	p.AddTargetBlankToFullyQualifiedLinks(targetBlankLinks)
	for scheme, checks := range urlSchemes {
		if len(checks) == 0 {
			p.AllowURLSchemes(scheme)
		}
		for _, check := range checks {
			p.AllowURLSchemeWithCustomPolicy(scheme, check)
		}
	}
	p.AllowElements(bareElements...)
	for _, r := range attrRules {
		b := p.AllowAttrs(r.attrs...)
		if r.match != nil {
			b = b.Matching(r.match)
		}
		if len(r.on) == 0 {
			b.Globally()
		} else {
			b.OnElements(r.on...)
		}
	}
	return p
}

// hasHost reports whether u names a host, as an absolute http(s) URL does.
func hasHost(u *url.URL) bool { return u.Host != "" }
