package message

import (
	"strings"
	"testing"
)

func TestCleanStyle(t *testing.T) {
	for _, tc := range []struct{ css, want string }{
		{"color: red", "color: red"},
		{"margin:0;padding:0", "margin: 0; padding: 0"},
		{"  COLOR : #FF0000 ; ", "COLOR: #FF0000"},
		{"font-family: Arial, 'Helvetica Neue', \"Segoe UI\", sans-serif", "font-family: Arial, 'Helvetica Neue', \"Segoe UI\", sans-serif"},
		{"font-family: '微软雅黑'", "font-family: '微软雅黑'"},
		{"color: rgb(10, 20, 30); background-color: rgba(0 0 0 / 50%)", "color: rgb(10, 20, 30); background-color: rgba(0 0 0 / 50%)"},
		{"color: red !important", "color: red"},
		{"color: red ! IMPORTANT", "color: red"},
		{"-webkit-border-radius: 4px; mso-line-height-rule: exactly", "-webkit-border-radius: 4px"},
		{"line-height: 20px; display: none; position: fixed", "line-height: 20px"},
		{"border: 1px solid #ccc", "border: 1px solid #ccc"},
		// What could load or run something goes, with its declaration.
		{"background-color: url(javascript:alert(1)); color: red", "color: red"},
		{"width: expression(alert(1))", ""},
		{"width: expr\\65ssion(alert(1))", ""},
		{"width: expr/**/ession(alert(1))", ""},
		{"color: \\75 rl(x)", ""},
		{"color: rgb(javascript)", ""},
		{"color: x rgb(1,2,3", ""},
		{"font-family: 'a;background:url(javascript:alert(1))'", ""},
		{"font-family: 'a\\27 b'", ""},
		{"font-family: 'unterminated", ""},
		{"@import 'https://evil.example/x.css'", ""},
		{"color: red; behavior: url(x.htc); -moz-binding: url(x)", "color: red"},
		{"color: image-set('a.png' 1x)", ""},
		{"color: red</style><script>", ""},
		{"color", ""},
		{"color:", ""},
		{"", ""},
		{"colour: red", ""},
		{"font-family: Behavior, Arial", ""},
		{"font-family: x-moz-BINDING", ""},
		{"c\u043elor: red", ""}, // a Cyrillic o
		{"color: " + strings.Repeat("a", maxStyle), ""},
	} {
		if got := cleanStyle(tc.css); got != tc.want {
			t.Errorf("cleanStyle(%q) = %q, want %q", tc.css, got, tc.want)
		}
	}
}

func TestRender(t *testing.T) {
	for _, tc := range []struct{ body, want, text string }{
		// No style: the body is returned as it is.
		{`<p>Hello <a href="https://example.com/?a=1&amp;b=2">there</a></p>`, `<p>Hello <a href="https://example.com/?a=1&amp;b=2">there</a></p>`, "Hello there"},
		// A style is rewritten in place, the rest of the tag kept and
		// escaped as bluemonday writes it.
		{`<p>a</p><td align="center" style="padding:8px;position:fixed" title="x&#34;y">b</td><p>c</p>`,
			`<p>a</p><td align="center" style="padding: 8px" title="x&#34;y">b</td><p>c</p>`, "a\nb\nc"},
		// A style left empty is dropped, the element kept.
		{`<div style="position: fixed">x</div>`, `<div>x</div>`, "x"},
		{`<br style="color: red"/>x`, `<br style="color: red"/>x`, "x"},
		// An attribute value that mentions style= is not a style.
		{`<a href="https://example.com/?style=1" title="style=x">y</a>`, `<a href="https://example.com/?style=1" title="style=x">y</a>`, "y"},
		{`<p style="color: red">one</p><p style="display: none">two</p>`, `<p style="color: red">one</p><p>two</p>`, "one\ntwo"},
	} {
		clean, text, _ := render(tc.body, DefaultMaxBody, false)
		if clean != tc.want {
			t.Errorf("render(%q) body = %q, want %q", tc.body, clean, tc.want)
		}
		if text != tc.text {
			t.Errorf("render(%q) text = %q, want %q", tc.body, text, tc.text)
		}
	}
}

// BenchmarkCleanStyle measures the check of one typical inline style.
func BenchmarkCleanStyle(b *testing.B) {
	const css = "padding: 24px; font-family: Arial, sans-serif; font-size: 14px; line-height: 20px; color: #333333"
	for b.Loop() {
		if cleanStyle(css) == "" {
			b.Fatal("cleanStyle dropped everything")
		}
	}
}

// FuzzCleanStyle checks what render relies on: cleanStyle keeps nothing a
// browser could load or run, and a style it returns comes back unchanged
// (render leaves such a tag alone, and a stored body stays as it was).
func FuzzCleanStyle(f *testing.F) {
	for _, v := range []string{
		"color: red; font-family: 'Helvetica Neue', Arial",
		"background: url(javascript:alert(1))",
		"width: expr\\65ssion(alert(1))",
		"color: rgb(1, 2, 3) !important; -webkit-border-radius: 4px",
		"font-family: 'a;b:url(x)'",
	} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, css string) {
		clean := cleanStyle(css)
		if bad := unsafeCSS(clean); bad != "" {
			t.Fatalf("cleanStyle(%q) = %q, which has %s", css, clean, bad)
		}
		if again := cleanStyle(clean); again != clean {
			t.Fatalf("cleanStyle(%q) = %q, but cleanStyle(%q) = %q", css, clean, clean, again)
		}
	})
}

// TestSanitizeStyleSpellings sends styles the ways HTML allows writing an
// attribute through the whole sanitizer: render finds each one only in
// bluemonday's spelling, so each must come out filtered.
func TestSanitizeStyleSpellings(t *testing.T) {
	p := New(0)
	for _, html := range []string{
		`<DIV STYLE="color: red; background: url(javascript:alert(1))">x</DIV>`,
		`<div style = "color: red; width: expression(alert(1))">x</div>`,
		`<div style='color: red; background-image: url(https://evil.example/t.png)'>x</div>`,
		`<div style=color:red;behavior:url(x.htc)>x</div>`,
		"<div\tStYlE\n=\n\"color: red; -moz-binding: url(x)\">x</div>",
		`<div style="color: red; background: url(javascript:alert(1))" style="width: expression(1)">x</div>`,
		`<img src="https://example.com/a.png" style="color: red; width: e&#x78;pression(alert(1))">`,
	} {
		body, _, _ := p.sanitize(html, false)
		if !strings.Contains(body, `style="color: red"`) {
			t.Errorf("sanitize(%q) = %q, want the allowed declaration kept as style=\"color: red\"", html, body)
		}
		if reason := unsafeHTML(body); reason != "" {
			t.Errorf("sanitize(%q) = %q: %s", html, body, reason)
		}
	}
}

// TestAllowedProperty checks allowedProperty against stripping the vendor
// prefixes off a lower-cased copy, and that it allocates nothing.
func TestAllowedProperty(t *testing.T) {
	props := []string{
		"color", "COLOR", "margin", "padding-left", "-webkit-border-radius", "-MOZ-Border-Radius", "mso-line-height-rule",
		"prince-color", "-webkit--moz-color", "-moz--webkit-color", "-webkit-", "-", "m", "p", "x-moz-binding",
		"behavior", "-ms-behavior", "font_family", "col0r", "", strings.Repeat("a", 41),
		"-webkit-" + strings.Repeat("a", 32), "-khtml-background-color",
	}
	for _, prop := range props {
		want := false
		if prop != "" && len(prop) <= 40 && strings.Trim(strings.ToLower(prop), "abcdefghijklmnopqrstuvwxyz-") == "" {
			p := strings.ToLower(prop)
			for _, pre := range vendorPrefixes {
				p = strings.TrimPrefix(p, pre)
			}
			want = styleProperties[p]
		}
		if got := allowedProperty(prop); got != want {
			t.Errorf("allowedProperty(%q) = %v, want %v", prop, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		for _, prop := range props {
			allowedProperty(prop)
		}
	}); n != 0 {
		t.Errorf("allowedProperty allocates %v times, want none", n)
	}
}
