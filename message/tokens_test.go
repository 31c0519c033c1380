package message

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	xhtml "golang.org/x/net/html"

	"burner/internal/benchdata"
)

// tagHTML is HTML whose tags take each way through rawTagName and
// rawAttrs: as bluemonday writes them, and in the spellings it never
// writes, which must fall back to the tokenizer.
var tagHTML = []string{
	`<p>a</p><br/><br /><hr>`,
	`<a href="https://example.test/a?b=c" rel="nofollow noopener" target="_blank">x</a>`,
	`<td style="color: red; padding: 4px" bgcolor="#fff">y</td>`,
	`<a href="https://example.test/?a=1&amp;b=2">entity</a>`,
	`<A HREF="x">upper</A><P Style="color: red">`,
	`<a href='single' title=bare data-x = "spaced">q</a>`,
	`<a href="1" href="2">dup</a><img src="x"/><img src="y" />`,
	"<p style=\"a\x00b\">nul</p><b\x00>nul name</b\x00>",
	`<h1 id="a:b_c-d">h</h1><font face="Arial" size="+1">f</font>`,
	`<p title="a/b>c">gt</p><p/ class="x">slash</p><p =a="b">eq</p>`,
	`<a href="x"`,
	`</p class="x"></P >`,
}

// TestRawTagToken checks rawTagName and rawAttrs against the tokenizer's
// TagName and TagAttr on every tag of tagHTML, of bluemonday's output of
// it, and of the golden messages' bodies.
func TestRawTagToken(t *testing.T) {
	p := New(0)
	inputs := append([]string(nil), tagHTML...)
	for _, in := range tagHTML {
		inputs = append(inputs, p.policy.Sanitize(in))
	}
	for _, raw := range goldenSources(t) {
		inputs = append(inputs, string(raw))
		if m, _ := p.Parse(raw, goldenEnvelope); m.Body != nil {
			inputs = append(inputs, *m.Body)
		}
	}
	fast := 0
	for _, in := range inputs {
		fast += checkRawTagTokens(t, in)
	}
	if fast == 0 {
		t.Fatal("no tag took the fast path")
	}
}

// FuzzRawTagToken checks rawTagName and rawAttrs against the tokenizer on
// arbitrary HTML and on bluemonday's output of it.
func FuzzRawTagToken(f *testing.F) {
	fuzzHTML(f, tagHTML, func(t *testing.T, in string) { checkRawTagTokens(t, in) })
}

// fuzzHTML runs check on arbitrary HTML from seeds and on bluemonday's
// output of it, which is what the fast paths are written for.
func fuzzHTML(f *testing.F, seeds []string, check func(t *testing.T, in string)) {
	for _, in := range seeds {
		f.Add(in)
	}
	p := New(0)
	f.Fuzz(func(t *testing.T, in string) {
		check(t, in)
		check(t, p.policy.Sanitize(in))
	})
}

// checkRawTagTokens tokenizes in and, for each tag whose name and
// attributes rawTagName and rawAttrs read, checks that they read what
// TagName and TagAttr return. It returns how many tags they read.
func checkRawTagTokens(t *testing.T, in string) int {
	t.Helper()
	fast := 0
	z := xhtml.NewTokenizer(strings.NewReader(in))
	for {
		tt := z.Next()
		if tt == xhtml.ErrorToken {
			return fast
		}
		if tt != xhtml.StartTagToken && tt != xhtml.EndTagToken && tt != xhtml.SelfClosingTagToken {
			continue
		}
		raw := string(z.Raw())
		name := rawTagName(raw)
		attrs, ok := []xhtml.Attribute(nil), false
		if name != "" && tt != xhtml.EndTagToken {
			attrs, ok = rawAttrs(raw, len(name), nil)
		}
		want, _ := z.TagName()
		if name != "" && name != string(want) {
			t.Fatalf("rawTagName(%q) = %q, TagName %q", raw, name, want)
		}
		var wantAttrs []xhtml.Attribute
		for more := true; more; {
			var k, v []byte
			if k, v, more = z.TagAttr(); k == nil {
				break
			}
			wantAttrs = append(wantAttrs, xhtml.Attribute{Key: string(k), Val: string(v)})
		}
		if !ok {
			continue
		}
		fast++
		if len(attrs) != len(wantAttrs) {
			t.Fatalf("rawAttrs(%q) = %q, TagAttr %q", raw, attrs, wantAttrs)
		}
		for i := range attrs {
			if attrs[i] != wantAttrs[i] {
				t.Fatalf("rawAttrs(%q) = %q, TagAttr %q", raw, attrs, wantAttrs)
			}
		}
	}
}

// bodyHTML is HTML for bmTokens: as bluemonday writes it, and in forms it
// must give up on or read as the tokenizer does.
var bodyHTML = []string{
	``, `plain text`, `a &amp; b &lt;c&gt; &#39;d&#34; e&#13;f`,
	`<p>a</p><br/>b<br/><hr/>`,
	`<a href="https://x.test/?a=1&amp;b=2" rel="nofollow noopener" target="_blank">x &amp; y</a>`,
	`<table bgcolor="#fff"><tr><td style="color: red; padding: 4px">y</td></tr></table>`,
	`<pre>  keep
  lines </pre><p>fold
lines</p>`,
	`a < b`, `a <3 b<p>`, `x</p`, `<p`, `<p x="1"`, `<p x="1" x="2">`, `<P>`, `<p >`, `</p >`,
	`&nbsp;`, `&amp`, `&#x27;`, "a\rb", "a\x00b", `<p title="a&#13;b">t</p>`, `<p title="a&quot;b">`,
	`<!-- c -->x`, `<!DOCTYPE html>`, `<?xml?>`, `<title>t</title>`, `<textarea><p></textarea>`,
	`<x-y>custom</x-y>`, `<h1 id="a:b_c-d">h</h1>`, `<img src="cid:a"/>`, `<a href=""/>`,
}

// TestBMTokens checks that every token bmTokens reads, until it gives up,
// is the token xhtml.Tokenizer reads, on bodyHTML, bluemonday's output of
// tagHTML and bodyHTML, and the golden messages.
func TestBMTokens(t *testing.T) {
	p := New(0)
	var inputs []string
	for _, in := range append(append([]string(nil), tagHTML...), bodyHTML...) {
		inputs = append(inputs, in, p.policy.Sanitize(in))
	}
	for _, raw := range goldenSources(t) {
		inputs = append(inputs, string(raw))
		if m, _ := p.Parse(raw, goldenEnvelope); m.Body != nil {
			inputs = append(inputs, *m.Body, p.policy.Sanitize(string(raw)))
		}
	}
	whole := 0
	for _, in := range inputs {
		if checkBMTokens(t, in) {
			whole++
		}
	}
	if whole < len(inputs)/3 {
		t.Fatalf("bmTokens read %d of %d inputs whole", whole, len(inputs))
	}
}

func FuzzBMTokens(f *testing.F) {
	fuzzHTML(f, append(append([]string(nil), tagHTML...), bodyHTML...), func(t *testing.T, in string) { checkBMTokens(t, in) })
}

// checkBMTokens compares the tokens of bmTokens and xhtml.Tokenizer on in
// up to where bmTokens gives up, and reports whether it read in whole.
func checkBMTokens(t *testing.T, in string) bool {
	t.Helper()
	bm := &bmTokens{s: in}
	z := xhtml.NewTokenizer(strings.NewReader(in))
	for {
		tt := bm.Next()
		if bm.Bad() {
			return false
		}
		want := z.Next()
		if tt != want || bm.Len() != len(z.Raw()) {
			t.Fatalf("in %q at %d: bmTokens read %v of %d bytes, the tokenizer %v %q", in, bm.start, tt, bm.Len(), want, z.Raw())
		}
		switch tt {
		case xhtml.ErrorToken:
			return true
		case xhtml.TextToken:
			if got, want := string(bm.Text()), string(z.Text()); got != want {
				t.Fatalf("in %q at %d: text %q, the tokenizer's %q", in, bm.start, got, want)
			}
		default:
			name, _ := z.TagName()
			if bm.Name() != string(name) {
				t.Fatalf("in %q at %d: name %q, the tokenizer's %q", in, bm.start, bm.Name(), name)
			}
			var want []xhtml.Attribute
			for more := true; more; {
				var k, v []byte
				if k, v, more = z.TagAttr(); k == nil {
					break
				}
				want = append(want, xhtml.Attribute{Key: string(k), Val: string(v)})
			}
			if tt == xhtml.EndTagToken {
				continue
			}
			got := bm.Attrs(nil)
			if len(got) != len(want) {
				t.Fatalf("in %q at %d: attributes %q, the tokenizer's %q", in, bm.start, got, want)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("in %q at %d: attributes %q, the tokenizer's %q", in, bm.start, got, want)
				}
			}
		}
	}
}

// TestRenderBMTokens checks that render gives what it gives through the
// tokenizer alone, at caps that cut each body in many places.
func TestRenderBMTokens(t *testing.T) {
	p := New(0)
	var bodies []string
	for _, in := range append(append([]string(nil), tagHTML...), bodyHTML...) {
		bodies = append(bodies, in, p.policy.Sanitize(in))
	}
	for _, raw := range goldenSources(t) {
		bodies = append(bodies, p.policy.Sanitize(string(raw)))
	}
	for _, body := range bodies {
		for limit := 0; limit <= len(body)+8; limit += max(1, len(body)/40) {
			for _, cut := range []bool{false, true} {
				checkRender(t, body, limit, cut)
			}
		}
	}
}

func FuzzRenderBMTokens(f *testing.F) {
	for _, in := range append(append([]string(nil), tagHTML...), bodyHTML...) {
		f.Add(in, 1000)
	}
	p := New(0)
	f.Fuzz(func(t *testing.T, in string, limit int) {
		if limit < 0 || limit > 1<<20 {
			return
		}
		checkRender(t, in, limit, false)
		checkRender(t, p.policy.Sanitize(in), limit, false)
	})
}

// checkRender compares render of body with render through the tokenizer
// alone.
func checkRender(t *testing.T, body string, limit int, cut bool) {
	t.Helper()
	clean, text, links := render(body, limit, cut)
	wantClean, wantText, wantLinks, _ := new(renderer).run(newHTMLTokens(body[:min(len(body), limit+1)]), body, limit, cut)
	if clean != wantClean || text != wantText || strings.Join(links, "\n") != strings.Join(wantLinks, "\n") || len(links) != len(wantLinks) {
		t.Fatalf("render(%q, %d, %v) = %q, %q, %q; through the tokenizer %q, %q, %q",
			body, limit, cut, clean, text, links, wantClean, wantText, wantLinks)
	}
}

// TestBMTokensNewsletter checks that bmTokens reads bluemonday's output of
// realistic newsletters whole, so that render takes its fast way for them.
func TestBMTokensNewsletter(t *testing.T) {
	p := New(0)
	for i, nl := range benchdata.Batch(20, 3) {
		m, err := p.Parse(nl.Data(), "loadgen@sender.test")
		if err != nil || m.Body == nil {
			t.Fatalf("newsletter %d: body %v, err %v", i, m.Body, err)
		}
		if !checkBMTokens(t, *m.Body) {
			t.Errorf("newsletter %d: bmTokens gave up on its body", i)
		}
	}
}

// goldenSources returns the golden messages of testdata, as received.
func goldenSources(t *testing.T) [][]byte {
	t.Helper()
	files, err := filepath.Glob("testdata/*.eml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden messages: %v", err)
	}
	var out [][]byte
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, raw)
	}
	return out
}
