package message

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/microcosm-cc/bluemonday"
)

// ugcAndEmail is the policy as burner first built it: bluemonday's
// UGCPolicy, then what email HTML needs. sanitize.go writes the same
// policy as data, so that the fast sanitizer can read it.
func ugcAndEmail() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	p.AllowRelativeURLs(false)
	p.AllowURLSchemeWithCustomPolicy("http", hasHost)
	p.AllowURLSchemeWithCustomPolicy("https", hasHost)
	p.AllowURLSchemes("cid")
	p.AddTargetBlankToFullyQualifiedLinks(true)
	p.AllowAttrs("style").Globally()
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

// TestPolicyIsUGCAndEmail holds newPolicy to UGCPolicy with email's
// additions: every element of HTML with every attribute either allows,
// with values that pass and fail each pattern, and random documents.
func TestPolicyIsUGCAndEmail(t *testing.T) {
	ours, want := newPolicy(), ugcAndEmail()
	same := func(html string) {
		t.Helper()
		if got, w := ours.Sanitize(html), want.Sanitize(html); got != w {
			t.Fatalf("Sanitize(%q) =\n%q\nUGCPolicy and email's additions:\n%q", html, got, w)
		}
	}
	attrs := map[string]bool{"onclick": true, "data-x": true, "target": true, "class": true}
	for _, r := range attrRules {
		for _, a := range r.attrs {
			attrs[a] = true
		}
	}
	values := []string{"", "1", "-3", "+2", "1.5e3", "100%", "center", "LEFT", "top", "rtl", "en", "#fff", "red", "Arial", "disc",
		"A", "row", "nowrap", "open", "rect", "#map", "1,2,3", "2026-03-14T15:09:26Z", "a b", "x\"y", "https://example.com/a",
		"https:api/v1", "/relative", "mailto:a@example.com", "cid:part1", "javascript:alert(1)", "data:text/html,x", "ftp://x"}
	for _, e := range append(htmlElements, "x-custom", "o:p") {
		same("<" + e + ">x</" + e + ">")
		same("<" + e + "/>y")
		for a := range attrs {
			for _, v := range values {
				same("<" + e + " " + a + "=\"" + strings.ReplaceAll(v, `"`, "&quot;") + "\">x</" + e + ">")
			}
		}
	}
	rng := rand.New(rand.NewPCG(5, 9))
	for range 2000 {
		same(randomHTML(rng, 1+rng.IntN(30)))
	}
}

// TestPolicyViewAsked: the two sets the view asks of bluemonday hold what
// its defaults are known to hold, so that a probe that asks wrongly fails
// here rather than sending every body to the slow path or keeping a
// script's text.
func TestPolicyViewAsked(t *testing.T) {
	v := New(0).view
	for _, name := range []string{"script", "style", "iframe", "object", "noscript", "title", "frameset"} {
		if !v.skip[name] {
			t.Errorf("%s: content kept, want dropped", name)
		}
	}
	for _, name := range []string{"form", "textarea", "button", "svg", "video"} {
		if v.skip[name] {
			t.Errorf("%s: content dropped, want kept", name)
		}
	}
	for _, name := range []string{"p", "div", "b", "br", "hr", "table", "td", "center"} {
		if !v.noAttrs[name] {
			t.Errorf("%s: dropped without attributes, want kept", name)
		}
	}
	for _, name := range []string{"a", "img", "font", "map"} {
		if v.noAttrs[name] {
			t.Errorf("%s: kept without attributes, want dropped", name)
		}
	}
}
