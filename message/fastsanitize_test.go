package message

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"burner/internal/benchdata"
)

// checkFastSanitize compares the fast sanitizer with bluemonday on html,
// under body caps from none to a few bytes: where the fast one takes the
// body, the two must write the same. It reports whether the fast one took
// it.
func checkFastSanitize(t *testing.T, p *Parser, html string) bool {
	t.Helper()
	return checkFastSanitizeCaps(t, p, html, 1<<30, len(html)/2, 7)
}

// checkFastSanitizeCaps is checkFastSanitize under the body caps given.
func checkFastSanitizeCaps(t *testing.T, p *Parser, html string, caps ...int) bool {
	t.Helper()
	fast := false
	for _, max := range caps {
		want := &capWriter{max: max}
		if err := p.policy.SanitizeReaderToWriter(strings.NewReader(html), want); err != nil && err != errCapped {
			t.Fatalf("bluemonday: %v", err)
		}
		got := &capWriter{max: max}
		if !fastSanitize(p.view, html, got) {
			continue
		}
		fast = true
		if got.buf.String() != want.buf.String() {
			t.Fatalf("fastSanitize(%q), cap %d =\n%q\nbluemonday:\n%q", html, max, got.buf.String(), want.buf.String())
		}
	}
	return fast
}

// TestFastSanitizeTakesMail: the fast sanitizer takes the HTML of
// realistic newsletters, and writes what bluemonday writes for them and
// for the HTML of the message golden files and the real-world corpus
// where it takes it.
func TestFastSanitizeTakesMail(t *testing.T) {
	p := New(0)
	for _, nl := range benchdata.Batch(50, 3) {
		parts := findTextOf(t, nl.Data())
		if parts.html == nil {
			t.Fatal("newsletter without HTML")
		}
		if !checkFastSanitize(t, p, *parts.html) {
			t.Fatalf("the fast sanitizer refused a newsletter:\n%s", *parts.html)
		}
	}
	var files []string
	for _, glob := range []string{"testdata/*.eml", "../testdata/realworld/*/*.eml", "../testdata/realworld/*/*/*.eml", "../testdata/realworld/*/*/*/*.eml"} {
		m, _ := filepath.Glob(glob)
		files = append(files, m...)
	}
	taken, html := 0, 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if parts := findTextOf(t, raw); parts.html != nil {
			html++
			if checkFastSanitize(t, p, strings.ReplaceAll(*parts.html, "\x00", "")) {
				taken++
			}
		}
	}
	t.Logf("the fast sanitizer took %d of the %d HTML bodies of %d messages", taken, html, len(files))
}

// findTextOf returns the text parts of raw as Parse finds them.
func findTextOf(t *testing.T, raw []byte) textParts {
	t.Helper()
	br := getReader(strings.NewReader(string(raw)))
	defer putReader(br)
	_, e, err := readEntity(br)
	if e.Entity == nil {
		return textParts{}
	}
	return findText(e, err, DefaultMaxBody)
}

// TestFastSanitizePolicy holds the fast sanitizer to bluemonday's decision
// on every pair of these elements and attributes, with values that pass
// and fail each of the policy's patterns, and URLs of every kind (with no
// body cap: the decisions do not depend on it); and checks that the fast
// one takes the most part of them.
func TestFastSanitizePolicy(t *testing.T) {
	p := New(0)
	checkFastSanitize := func(t *testing.T, p *Parser, html string) bool {
		t.Helper()
		return checkFastSanitizeCaps(t, p, html, 1<<30)
	}
	elements := []string{"a", "abbr", "area", "article", "b", "base", "bdi", "bdo", "blockquote", "body", "br", "caption", "center",
		"cite", "code", "col", "colgroup", "dd", "del", "details", "div", "dl", "dt", "em", "embed", "figure", "font", "h1", "h3",
		"head", "hr", "html", "i", "iframe", "img", "input", "ins", "li", "link", "map", "meta", "meter", "noscript", "object", "ol",
		"p", "pre", "progress", "q", "s", "section", "small", "source", "span", "strike", "strong", "sub", "summary", "table",
		"tbody", "td", "tfoot", "th", "thead", "time", "tr", "track", "tt", "u", "ul", "video", "wbr", "x-custom", "svg"}
	attrs := []string{"abbr", "align", "alt", "bgcolor", "border", "cellpadding", "cellspacing", "cite", "class", "color", "colspan",
		"coords", "datetime", "dir", "face", "headers", "height", "high", "href", "id", "lang", "max", "name", "nowrap", "open",
		"rel", "rowspan", "scope", "shape", "size", "span", "src", "style", "summary", "target", "title", "type", "usemap", "valign",
		"value", "width", "onclick", "data-x"}
	values := []string{"", "1", "600", "100%", "-3", "+2", "1.5e3", "center", "LEFT", "top", "rtl", "en", "#fff", "#0a58ca", "red",
		"Arial, sans-serif", "disc", "A", "row", "colgroup", "nowrap", "open", "rect", "#map", "1,2,3", "2026-03-14T15:09:26Z",
		"color: red; padding: 4px", "a b c", "x\"y", "it's", "<b>", "https://example.com/a?b=1&amp;c=2", "http://x.test",
		"https:api/v1", "/relative", "mailto:a@example.com", "cid:part1", "javascript:alert(1)", "data:text/html,x",
		" https://example.com/ ", "https://exa mple.com", "HTTPS://EXAMPLE.COM/%7e", "https://example.com/a b", "ftp://x",
		"_blank", "nofollow", "noopener", "nofollow noopener", "https://example.com/&copy;", "x&notit;y", "a&amp=b"}
	// Each case is compared only where the fast sanitizer takes it: if it
	// gave most of them up, the comparison would say little.
	taken, cases := 0, 0
	check := func(html string) {
		cases++
		if checkFastSanitize(t, p, html) {
			taken++
		}
	}
	for _, e := range elements {
		for _, a := range attrs {
			for i, v := range values {
				check("<" + e + " " + a + "=\"" + strings.ReplaceAll(v, `"`, "&quot;") + "\">x</" + e + ">")
				if i%3 == 0 { // with a link, and self-closing: a third of the values is enough
					check("<" + e + " " + a + "='" + strings.ReplaceAll(v, `'`, "&#39;") + "' href=\"https://example.com/\">x</" + e + ">y")
					check("<" + e + " " + a + "=\"" + strings.ReplaceAll(v, `"`, "&quot;") + "\"/>")
				}
			}
		}
	}
	t.Logf("the fast sanitizer took %d of %d cases", taken, cases)
	if taken < cases*90/100 {
		t.Errorf("the fast sanitizer took %d of %d cases, want 90%% at least", taken, cases)
	}
}

// randomHTML returns a document of n pieces drawn from what mail holds:
// known and unknown elements, attributes quoted and not, references,
// comments, doctypes, raw text elements and stray end tags.
func randomHTML(rng *rand.Rand, n int) string {
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	var b strings.Builder
	for range n {
		switch rng.IntN(12) {
		case 0, 1, 2:
			b.WriteString(pick("Hello", " world ", "a &amp; b", "&nbsp;", "x &lt; y", "it's \"q\"", "\r\n", "\n", "caf\u00e9",
				"&copy 2026", "&notit;", "&#169;", "&#x1F600;", "&bogus;", "a > b", "5 &", "&amp", " \t "))
		case 3, 4:
			name := pick("p", "a", "td", "table", "tr", "div", "span", "img", "br", "font", "center", "TD", "Table", "b", "x-y",
				"h1", "ul", "li", "iframe", "object", "form", "body", "html", "head", "meta", "A")
			b.WriteString("<" + name)
			for range rng.IntN(4) {
				b.WriteString(pick(" ", "\n", "  ", "\t"))
				key := pick("href", "style", "width", "align", "bgcolor", "border", "src", "alt", "title", "id", "class", "target",
					"rel", "HREF", "Style", "color", "face", "size", "valign", "lang", "dir", "onclick", "width")
				switch rng.IntN(4) {
				case 0:
					b.WriteString(key)
				case 1:
					b.WriteString(key + "=" + pick("600", "center", "https://e.test/x", "x/", "#fff", "1"))
				case 2:
					b.WriteString(key + ` = "` + pick("https://e.test/a?b=1&amp;c=2", "padding: 4px; color: red", "", "left",
						"https://e.test/&copy=1", "mailto:x@y.test", "javascript:x()", "100%", "a&#39;b", "x\r\ny", "rtl") + `"`)
				case 3:
					b.WriteString(key + `='` + pick("https://e.test/", "it\"s", "Arial", "3") + `'`)
				}
			}
			b.WriteString(pick(">", "/>", " >", " />"))
		case 5, 6:
			b.WriteString("</" + pick("p", "a", "td", "table", "tr", "div", "span", "font", "TD", "iframe", "object", "x-y", "b") + pick(">", " >"))
		case 7:
			b.WriteString(pick("<!-- c -->", "<!---->", "<!-->", "<!--->", "<!-- a -- b -->", "<!-- x --!>", "<!DOCTYPE html>",
				"<!doctype html PUBLIC \"x\">", "<![CDATA[x]]>", "<!x>"))
		case 8:
			tag := pick("style", "title", "textarea", "xmp", "noscript", "iframe", "STYLE", "Title")
			b.WriteString("<" + tag + ">" + pick("a { color: red; }", "x &amp; y", "</b>", "<p>", "") + "</" + pick(tag, strings.ToLower(tag), strings.ToUpper(tag)) + ">")
		case 9:
			b.WriteString(pick("<", "< p", "<?x?>", "</>", "</ p>", "<p/x>", "<a b=c=d>", "<p a=\"1\"b=\"2\">", "<a href=x/>", "<br/ >"))
		default:
			b.WriteString(pick("<b>", "</b>", "<i>", "<br>", "<hr/>", "<wbr>"))
		}
	}
	return b.String()
}

// TestFastSanitizeRandomHTML compares the two on random documents, and
// checks that the fast one takes most of them, so that the comparison
// means something.
func TestFastSanitizeRandomHTML(t *testing.T) {
	p := New(0)
	rng := rand.New(rand.NewPCG(31, 7))
	taken, runs := 0, 6000
	for range runs {
		n := 1 + rng.IntN(30)
		if checkFastSanitize(t, p, randomHTML(rng, n)) {
			taken++
		}
	}
	if taken < runs/4 {
		t.Errorf("the fast sanitizer took %d of %d random documents", taken, runs)
	}
}

func FuzzFastSanitize(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		f.Add(randomHTML(rng, 12))
	}
	for _, nl := range benchdata.Batch(3, 1) {
		f.Add(*nl.Message().Body)
	}
	p := New(0)
	f.Fuzz(func(t *testing.T, html string) {
		checkFastSanitize(t, p, html) // a body made from plain text may hold NUL
	})
}
