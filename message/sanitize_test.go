package message

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"mime/quotedprintable"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	xhtml "golang.org/x/net/html"
)

// xssVectors are filter-evasion vectors in the style of the OWASP XSS
// Filter Evasion Cheat Sheet, the HTML5 Security Cheatsheet and the
// published mutation-XSS write-ups. Each is the HTML of an email body.
var xssVectors = []struct {
	name, html string
}{
	// <script>, spelled every way a filter might miss.
	{"script plain", `<script>alert(1)</script>`},
	{"script mixed case", `<ScRiPt>alert(1)</sCrIpT>`},
	{"script with src", `<script src="https://evil.example/xss.js"></script>`},
	{"script attributes", `<script type="text/javascript" defer async>alert(1)</script>`},
	{"script slash attribute", `<script/xss src="https://evil.example/xss.js"></script>`},
	{"script nested broken", `<scr<script>ipt>alert(1)</scr</script>ipt>`},
	{"script double open", `<<script>alert(1);//<</script>`},
	{"script unclosed", `<script src=https://evil.example/xss.js?< B >`},
	{"script no closing bracket", `<script>alert(1)`},
	{"script null byte in name", "<scr\x00ipt>alert(1)</scr\x00ipt>"},
	{"script null byte before", "<\x00script>alert(1)</script>"},
	{"script inside comment end", `<!--x--><script>alert(1)</script>`},
	{"script extra open bracket", `<<SCRIPT>alert("XSS");//<</SCRIPT>`},
	{"script after title", `<title>x</title><script>alert(1)</script>`},
	{"script after broken title", `</title><script>alert(1)</script>`},
	{"script in textarea breakout", `<textarea></textarea><script>alert(1)</script>`},
	{"script in noscript title", `<noscript><p title="</noscript><img src=x onerror=alert(1)>"></noscript>`},
	{"script in template", `<template><script>alert(1)</script></template>`},
	{"script after template breakout", `<template></template><script>alert(1)</script>`},
	{"script in xmp", `<xmp><script>alert(1)</script></xmp><script>alert(2)</script>`},
	{"script cdata", `<![CDATA[<script>alert(1)</script>]]>`},
	{"script style breakout", `<style></style><script>alert(1)</script>`},
	{"script in plaintext", `<plaintext><script>alert(1)</script>`},

	// Event handlers.
	{"img onerror", `<img src=x onerror=alert(1)>`},
	{"img onerror quoted", `<img src="https://example.com/a.png" onerror="alert(1)">`},
	{"img slashes instead of spaces", `<img/src=x/onerror=alert(1)>`},
	{"img newline before handler", "<img src=x\nonerror=alert(1)>"},
	{"img tab before handler", "<img src=x\tonerror=alert(1)>"},
	{"img formfeed before handler", "<img src=x\fonerror=alert(1)>"},
	{"img mixed case handler", `<IMG SRC=x OnErRoR=alert(1)>`},
	{"img handler with backticks", "<img src=x onerror=`alert(1)`>"},
	{"img quote confusion", `<img """><script>alert(1)</script>">`},
	{"svg onload", `<svg onload=alert(1)>`},
	{"svg slash onload", `<svg/onload=alert(1)>`},
	{"body onload", `<body onload=alert(1)>hi</body>`},
	{"body onpageshow", `<body onpageshow=alert(1)>`},
	{"div onmouseover", `<div onmouseover="alert(1)">hover</div>`},
	{"b onclick", `<b onclick=alert(1)>bold</b>`},
	{"input autofocus onfocus", `<input onfocus=alert(1) autofocus>`},
	{"select autofocus onfocus", `<select autofocus onfocus=alert(1)>`},
	{"textarea autofocus onfocus", `<textarea autofocus onfocus=alert(1)>`},
	{"keygen autofocus onfocus", `<keygen autofocus onfocus=alert(1)>`},
	{"details ontoggle", `<details open ontoggle=alert(1)>`},
	{"marquee onstart", `<marquee onstart=alert(1)>x</marquee>`},
	{"video source onerror", `<video><source onerror="alert(1)"></video>`},
	{"audio src onerror", `<audio src=x onerror=alert(1)>`},
	{"custom element onclick", `<x onclick=alert(1)>click</x>`},
	{"custom element contenteditable", `<x contenteditable onfocus=alert(1) autofocus>x</x>`},
	{"table background onerror", `<table background="javascript:alert(1)" onmouseover=alert(2)><tr><td>x</td></tr></table>`},
	{"td onmouseover", `<table><tr><td onmouseover=alert(1)>x</td></tr></table>`},
	{"a onmouseover", `<a href="https://example.com/" onmouseover="alert(1)">x</a>`},
	{"iframe onload", `<iframe onload=alert(1)></iframe>`},
	{"object onerror", `<object onerror=alert(1)></object>`},
	{"form onsubmit", `<form onsubmit=alert(1)><input type=submit></form>`},
	{"isindex", `<isindex type=image src=1 onerror=alert(1)>`},
	{"isindex action", `<isindex action="javascript:alert(1)" type=submit value=click>`},
	{"handler in attribute name with slash", `<img src=x /onerror=alert(1)>`},
	{"handler after junk attribute", `<img src=x x=" " onerror=alert(1)>`},

	// Script URLs, with the scheme hidden every way the URL parser forgives.
	{"a javascript", `<a href="javascript:alert(1)">x</a>`},
	{"a javascript unquoted", `<a href=javascript:alert(1)>x</a>`},
	{"a javascript mixed case", `<a href="JaVaScRiPt:alert(1)">x</a>`},
	{"a javascript decimal entity", `<a href="&#106;avascript:alert(1)">x</a>`},
	{"a javascript all decimal entities", `<a href="&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;alert(1)">x</a>`},
	{"a javascript padded decimal entities", `<a href="&#0000106&#0000097&#0000118&#0000097&#0000115&#0000099&#0000114&#0000105&#0000112&#0000116&#0000058alert(1)">x</a>`},
	{"a javascript hex entities", `<a href="&#x6A;&#x61;&#x76;&#x61;&#x73;&#x63;&#x72;&#x69;&#x70;&#x74;&#x3A;alert(1)">x</a>`},
	{"a javascript hex entities no semicolon", `<a href="&#x6A&#x61&#x76&#x61&#x73&#x63&#x72&#x69&#x70&#x74&#x3Aalert(1)">x</a>`},
	{"a javascript tab entity", `<a href="jav&#x09;ascript:alert(1)">x</a>`},
	{"a javascript newline entity", `<a href="jav&#x0A;ascript:alert(1)">x</a>`},
	{"a javascript cr entity", `<a href="jav&#x0D;ascript:alert(1)">x</a>`},
	{"a javascript literal tab", "<a href=\"jav\tascript:alert(1)\">x</a>"},
	{"a javascript literal newline", "<a href=\"java\nscript:alert(1)\">x</a>"},
	{"a javascript leading spaces", `<a href="  javascript:alert(1)">x</a>`},
	{"a javascript leading entity space", `<a href="&#32;javascript:alert(1)">x</a>`},
	{"a javascript leading control chars", "<a href=\"\x01\x02\x03javascript:alert(1)\">x</a>"},
	{"a javascript leading entity control", `<a href="&#14;javascript:alert(1)">x</a>`},
	{"a javascript colon entity", `<a href="javascript&colon;alert(1)">x</a>`},
	{"a javascript colon decimal", `<a href="javascript&#58;alert(1)">x</a>`},
	{"a javascript null byte", "<a href=\"java\x00script:alert(1)\">x</a>"},
	{"a javascript entity null", `<a href="java&#0;script:alert(1)">x</a>`},
	{"a vbscript", `<a href="vbscript:msgbox(1)">x</a>`},
	{"a data html", `<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>`},
	{"a data html plain", `<a href="data:text/html,<script>alert(1)</script>">x</a>`},
	{"a livescript", `<a href="livescript:alert(1)">x</a>`},
	{"a protocol relative", `<a href="//evil.example/">x</a>`},
	{"a backslash relative", `<a href="\\evil.example/">x</a>`},
	{"a relative path", `<a href="/api/v1/inbox?to=alice">x</a>`},
	{"a fragment", `<a href="#top">x</a>`},
	{"a https then javascript", `<a href="https:javascript:alert(1)">x</a>`},
	{"a https without slashes", `<a href="https:api/v1/inbox?to=alice">x</a>`},
	{"img http one slash", `<img src="http:/api/v1/emails?to=alice">`},
	{"img https backslashes", `<img src="https:\\evil.example/a.png">`},
	{"a http no host", `<a href="http:///api/v1/emails">x</a>`},
	{"img javascript src", `<img src="javascript:alert(1)">`},
	{"img javascript src entity", `<img src="&#106;avascript:alert(1)">`},
	{"img data svg", `<img src="data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+">`},
	{"img srcset javascript", `<img srcset="javascript:alert(1) 1x, https://example.com/a.png 2x">`},
	{"img lowsrc dynsrc", `<img lowsrc="javascript:alert(1)" dynsrc="javascript:alert(2)">`},
	{"img longdesc", `<img src="https://example.com/a.png" longdesc="javascript:alert(1)">`},
	{"area javascript", `<map name=m><area href="javascript:alert(1)" shape=rect coords="0,0,10,10"></map>`},
	{"blockquote cite javascript", `<blockquote cite="javascript:alert(1)">q</blockquote>`},
	{"q cite javascript", `<q cite="javascript:alert(1)">q</q>`},
	{"del cite javascript", `<del cite="javascript:alert(1)">q</del>`},
	{"ins cite relative", `<ins cite="evil">q</ins>`},
	{"form action", `<form action="javascript:alert(1)"><input type=submit></form>`},
	{"button formaction", `<form><button formaction="javascript:alert(1)">x</button></form>`},
	{"input formaction", `<input type=image formaction="javascript:alert(1)" src=x>`},
	{"video poster", `<video poster="javascript:alert(1)"></video>`},
	{"body background", `<body background="javascript:alert(1)">`},
	{"td background", `<table><tr><td background="javascript:alert(1)">x</td></tr></table>`},
	{"object data", `<object data="javascript:alert(1)"></object>`},
	{"object data html", `<object data="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg=="></object>`},
	{"embed src", `<embed src="javascript:alert(1)">`},
	{"embed svg", `<embed src="https://evil.example/xss.svg" type="image/svg+xml">`},
	{"applet", `<applet code="x" codebase="javascript:alert(1)"></applet>`},
	{"iframe javascript", `<iframe src="javascript:alert(1)"></iframe>`},
	{"iframe srcdoc", `<iframe srcdoc="&lt;script&gt;alert(1)&lt;/script&gt;"></iframe>`},
	{"frameset", `<frameset><frame src="javascript:alert(1)"></frameset>`},
	{"meta refresh", `<meta http-equiv="refresh" content="0;url=javascript:alert(1)">`},
	{"meta refresh data", `<meta http-equiv="refresh" content="0;url=data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">`},
	{"meta charset utf-7", `<meta charset="utf-7">+ADw-script+AD4-alert(1)+ADw-/script+AD4-`},
	{"base href", `<base href="javascript:alert(1)//"><a href="x">x</a>`},
	{"link import", `<link rel="import" href="https://evil.example/x.html">`},
	{"link stylesheet", `<link rel="stylesheet" href="javascript:alert(1)">`},

	// SVG and MathML.
	{"svg script", `<svg><script>alert(1)</script></svg>`},
	{"svg script href", `<svg><script href="data:,alert(1)"></script></svg>`},
	{"svg a xlink", `<svg><a xlink:href="javascript:alert(1)"><text x="20" y="20">x</text></a></svg>`},
	{"svg animate", `<svg><animate onbegin=alert(1) attributeName=x dur=1s>`},
	{"svg set href", `<svg><a><set attributeName="href" to="javascript:alert(1)"/><text y="20">x</text></a></svg>`},
	{"svg use", `<svg><use href="data:image/svg+xml,&lt;svg id='x' xmlns='http://www.w3.org/2000/svg'&gt;&lt;image href='1' onerror='alert(1)' /&gt;&lt;/svg&gt;#x"></use></svg>`},
	{"svg foreignobject", `<svg><foreignObject><iframe src="javascript:alert(1)"></iframe></foreignObject></svg>`},
	{"svg style mxss", `<svg></p><style><a id="</style><img src=1 onerror=alert(1)>">`},
	{"math href", `<math href="javascript:alert(1)">x</math>`},
	{"math maction", `<math><maction actiontype="statusline" xlink:href="javascript:alert(1)">x</maction></math>`},
	{"math mglyph mxss", `<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>`},
	{"math mtext style mxss", `<math><mtext><h1><a><h6></a></h6><mglyph><svg><mtext><style><a title="</style><img src onerror=alert(1)>"></style></h1>`},
	{"form math mxss", `<form><math><mtext></form><form><mglyph><style></math><img src onerror=alert(1)>`},
	{"noscript mxss", `<noscript><style></noscript><img src=x onerror=alert(1)>`},

	// CSS.
	{"style expression", `<div style="width: expression(alert(1))">x</div>`},
	{"style expression escaped", `<div style="width: expr\65ssion(alert(1))">x</div>`},
	{"style expression comment", `<div style="width: expr/**/ession(alert(1))">x</div>`},
	{"style url javascript", `<div style="background-image: url(javascript:alert(1))">x</div>`},
	{"style url in color", `<div style="color: url(javascript:alert(1))">x</div>`},
	{"style url escaped", `<div style="background: \75 rl(javascript:alert(1))">x</div>`},
	{"style moz binding", `<div style="-moz-binding: url(https://evil.example/xss.xml#xss)">x</div>`},
	{"style behavior", `<div style="behavior: url(xss.htc)">x</div>`},
	{"style import in attribute", `<div style="@import 'https://evil.example/x.css'">x</div>`},
	{"style smuggled declaration", `<div style="color: red; font-family: 'a;background:url(javascript:alert(1))'">x</div>`},
	{"style border url", `<div style="border: 1px url(javascript:alert(1))">x</div>`},
	{"style width escaped", `<div style="width: \65 xpression(alert(1))">x</div>`},
	{"style position overlay", `<div style="position: fixed; top: 0; left: 0; width: 100%; height: 100%">overlay</div>`},
	{"style element import", `<style>@import 'https://evil.example/x.css';</style>`},
	{"style element expression", `<style>body { width: expression(alert(1)) }</style>`},
	{"style element moz binding", `<STYLE>li {-moz-binding: url(https://evil.example/xss.xml#xss)}</STYLE><ul><li>x</li></ul>`},
	{"style element url", `<style>.x{background:url("javascript:alert(1)")}</style><div class=x>x</div>`},
	{"style element breakout", `<style><img src="</style><img src=x onerror=alert(1)//">`},

	// Comments and broken nesting.
	{"comment breakout", `<!--<img src="--><img src=x onerror=alert(1)//">`},
	{"conditional comment", `<!--[if gte IE 4]><script>alert(1)</script><![endif]-->`},
	{"downlevel revealed comment", `<![if true]><script>alert(1)</script><![endif]>`},
	{"bogus comment", `<? foo="><script>alert(1)</script>">`},
	{"bang comment", `<! foo="><script>alert(1)</script>">`},
	{"end tag attribute", `</div foo="><script>alert(1)</script>">`},
	{"title breakout", `<title><img src="</title><img src=x onerror=alert(1)>">`},
	{"textarea breakout", `<textarea><img src="</textarea><img src=x onerror=alert(1)>">`},
	{"template breakout", `<template><img src="</template><img src=x onerror=alert(1)>"></template>`},
	{"iframe content breakout", `<iframe><img src="</iframe><img src=x onerror=alert(1)>"></iframe>`},
	{"noembed breakout", `<noembed><img src="</noembed><img src=x onerror=alert(1)>"></noembed>`},
	{"noframes breakout", `<noframes><img src="</noframes><img src=x onerror=alert(1)>"></noframes>`},
	{"attribute quote breakout", `<a href="https://example.com/" title='"><script>alert(1)</script>'>x</a>`},
	{"table foster parenting", `<table><img src=x onerror=alert(1)><tr><td>x</td></tr></table>`},
	{"select breakout", `<select><option><img src=x onerror=alert(1)></option></select>`},
	{"doctype smuggle", `<!DOCTYPE html><html><head><script>alert(1)</script></head><body>x</body></html>`},
	{"xml namespace", `<html xmlns:xss><?import namespace="xss" implementation="https://evil.example/x.htc"><xss:xss>XSS</xss:xss></html>`},
	{"xml island", `<xml id=i><x><c><![CDATA[<img src="javas]]><![CDATA[cript:alert(1)">]]></c></x></xml><span datasrc=#i datafld=c dataformatas=html></span>`},
}

// unsafeHTML returns why body, sanitized HTML, could run script, load a
// resource that runs code or leave the message, or "" when it is safe. It
// parses body as a browser would, so that markup the sanitizer wrote which
// re-parses differently (mutation XSS) is judged by what a browser sees.
func unsafeHTML(body string) string {
	if strings.Contains(strings.ToLower(body), "<script") {
		return "raw body contains <script"
	}
	if strings.Contains(strings.ToLower(body), "javascript:") {
		return "raw body contains javascript:"
	}
	return unsafeTree(body)
}

// unsafeTree is unsafeHTML without the checks on the raw string, which
// text such as "a javascript: URL" would fail harmlessly.
func unsafeTree(body string) string {
	doc, err := xhtml.Parse(strings.NewReader(body))
	if err != nil {
		return fmt.Sprintf("does not parse: %v", err)
	}
	var walk func(n *xhtml.Node) string
	walk = func(n *xhtml.Node) string {
		if n.Type == xhtml.ElementNode {
			if reason := unsafeElement(n); reason != "" {
				return reason
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if reason := walk(c); reason != "" {
				return reason
			}
		}
		return ""
	}
	return walk(doc)
}

// forbiddenElements run script, load active content, submit data, change
// how the rest of the page is read, or hide markup from the sanitizer.
var forbiddenElements = map[string]bool{
	"script": true, "style": true, "iframe": true, "frame": true, "frameset": true,
	"object": true, "embed": true, "applet": true, "meta": true, "base": true,
	"link": true, "form": true, "input": true, "button": true, "textarea": true,
	"select": true, "svg": true, "math": true, "template": true, "noscript": true,
	"isindex": true, "keygen": true, "xmp": true, "plaintext": true, "noembed": true,
	"noframes": true, "portal": true, "title": true, "xml": true,
}

// urlAttributes hold URLs a browser follows or fetches.
var urlAttributes = map[string]bool{
	"href": true, "src": true, "srcset": true, "action": true, "formaction": true,
	"xlink:href": true, "poster": true, "background": true, "cite": true,
	"data": true, "lowsrc": true, "dynsrc": true, "longdesc": true, "codebase": true,
	"classid": true, "ping": true, "manifest": true,
}

func unsafeElement(n *xhtml.Node) string {
	if n.Namespace != "" {
		return fmt.Sprintf("foreign (%s) element <%s>", n.Namespace, n.Data)
	}
	if forbiddenElements[n.Data] {
		return fmt.Sprintf("element <%s>", n.Data)
	}
	for _, a := range n.Attr {
		name := strings.ToLower(a.Key)
		if a.Namespace != "" {
			name = a.Namespace + ":" + name
		}
		switch {
		case strings.HasPrefix(name, "on"):
			return fmt.Sprintf("<%s> has event handler %s=%q", n.Data, name, a.Val)
		case name == "style":
			if bad := unsafeCSS(a.Val); bad != "" {
				return fmt.Sprintf("<%s> has style %q with %s", n.Data, a.Val, bad)
			}
		case name == "srcset":
			for cand := range strings.SplitSeq(a.Val, ",") {
				u, _, _ := strings.Cut(strings.TrimSpace(cand), " ")
				if !safeURL(u) {
					return fmt.Sprintf("<%s> has %s=%q", n.Data, name, a.Val)
				}
			}
		case urlAttributes[name]:
			if !safeURL(a.Val) {
				return fmt.Sprintf("<%s> has %s=%q", n.Data, name, a.Val)
			}
		}
	}
	return ""
}

// safeURL reports whether u, an attribute value the HTML parser has already
// entity-decoded, uses a scheme that runs nothing and stays inside the
// message or leaves it for another host. The URL parser of a browser
// ignores white space and control characters, so they are dropped first.
func safeURL(u string) bool {
	u = strings.ToLower(strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f || unicode.IsSpace(r) || unicode.IsControl(r) {
			return -1
		}
		return r
	}, u))
	for _, scheme := range []string{"http:", "https:"} {
		if rest, ok := strings.CutPrefix(u, scheme); ok {
			// Without "//" and a host, a browser resolves it against
			// burner's own origin (WHATWG URL, "special relative or
			// authority state"), and it reads a backslash as "/".
			rest = strings.ReplaceAll(rest, `\`, "/")
			return strings.HasPrefix(rest, "//") && strings.TrimLeft(rest, "/") != ""
		}
	}
	return strings.HasPrefix(u, "mailto:") || strings.HasPrefix(u, "cid:")
}

// unsafeCSS returns what in the style attribute value css could run script
// or load a resource, or "". It reads css after removing comments, CSS
// escapes (CSS Syntax §4.3.7) and white space, lower-cased.
func unsafeCSS(css string) string {
	var b strings.Builder
	for i := 0; i < len(css); {
		switch {
		case strings.HasPrefix(css[i:], "/*"):
			end := strings.Index(css[i+2:], "*/")
			if end < 0 {
				i = len(css)
			} else {
				i += 2 + end + 2
			}
		case css[i] == '\\' && i+1 < len(css):
			j := i + 1
			for j < len(css) && j-i <= 6 && isHex(css[j]) {
				j++
			}
			if j == i+1 { // an escaped character that is not hex stands for itself
				r, n := utf8.DecodeRuneInString(css[j:])
				b.WriteRune(r)
				i = j + n
				continue
			}
			v, _ := strconv.ParseUint(css[i+1:j], 16, 32)
			b.WriteRune(rune(v))
			if j < len(css) && (css[j] == ' ' || css[j] == '\t' || css[j] == '\n') {
				j++
			}
			i = j
		default:
			r, n := utf8.DecodeRuneInString(css[i:])
			b.WriteRune(r)
			i += n
		}
	}
	flat := strings.ToLower(strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return -1
		}
		return r
	}, b.String()))
	for _, bad := range []string{"expression(", "javascript:", "url(", "behavior", "-moz-binding", "@import", "image-set(", "position:"} {
		if strings.Contains(flat, bad) {
			return bad
		}
	}
	return ""
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// htmlMail returns an email whose body is the HTML part part, sent in the
// transfer encoding enc ("8bit", "quoted-printable" or "base64"), as a
// single part or, when alternative is true, as the HTML half of a
// multipart/alternative.
func htmlMail(t *testing.T, part, enc string, alternative bool) []byte {
	t.Helper()
	var body bytes.Buffer
	switch enc {
	case "8bit":
		body.WriteString(part)
	case "quoted-printable":
		w := quotedprintable.NewWriter(&body)
		if _, err := w.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	case "base64":
		s := base64.StdEncoding.EncodeToString([]byte(part))
		for len(s) > 76 {
			body.WriteString(s[:76] + "\r\n")
			s = s[76:]
		}
		body.WriteString(s)
	default:
		t.Fatalf("htmlMail: unknown encoding %q", enc)
	}
	var m bytes.Buffer
	m.WriteString("From: Mallory <mallory@evil.example>\r\nTo: alice@burner.test\r\nSubject: Your invoice\r\nMIME-Version: 1.0\r\n")
	htmlHeader := "Content-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: " + enc + "\r\n"
	if alternative {
		m.WriteString("Content-Type: multipart/alternative; boundary=\"=_b\"\r\n\r\n")
		m.WriteString("--=_b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nSee the HTML part.\r\n")
		m.WriteString("--=_b\r\n" + htmlHeader + "\r\n")
		m.Write(body.Bytes())
		m.WriteString("\r\n--=_b--\r\n")
	} else {
		m.WriteString(htmlHeader + "\r\n")
		m.Write(body.Bytes())
		m.WriteString("\r\n")
	}
	return m.Bytes()
}

func TestXSSCorpus(t *testing.T) {
	p := New(0)
	for _, v := range xssVectors {
		t.Run(v.name, func(t *testing.T) {
			part := "<p>Dear customer,</p>\n" + v.html + "\n<p>Regards</p>"
			for _, enc := range []string{"8bit", "quoted-printable", "base64"} {
				for _, alternative := range []bool{false, true} {
					raw := htmlMail(t, part, enc, alternative)
					m, err := p.Parse(raw, "mallory@evil.example")
					if err != nil {
						t.Fatalf("parse(%s, alternative=%v) returned error %v", enc, alternative, err)
					}
					if m.Body == nil {
						t.Fatalf("parse(%s, alternative=%v).Body = nil, want the sanitized HTML part", enc, alternative)
					}
					if !strings.Contains(*m.Body, "Dear customer") {
						t.Errorf("parse(%s, alternative=%v).Body = %q, lost the text before the vector", enc, alternative, *m.Body)
					}
					if reason := unsafeHTML(*m.Body); reason != "" {
						t.Errorf("parse(%s, alternative=%v) of %q: %s\nbody: %q", enc, alternative, v.html, reason, *m.Body)
					}
				}
			}
		})
	}
}

// FuzzSanitize runs HTML through the policy, starting from the corpus,
// and checks the result as a browser would parse it.
func FuzzSanitize(f *testing.F) {
	for _, v := range xssVectors {
		f.Add(v.html)
	}
	p := New(0)
	f.Fuzz(func(t *testing.T, html string) {
		body, _, _ := p.sanitize(html, false)
		if reason := unsafeTree(body); reason != "" {
			t.Fatalf("Sanitize(%q) = %q: %s", html, body, reason)
		}
	})
}

// TestUnsafeHTML checks the checker: it must flag what the sanitizer is
// meant to remove, or TestXSSCorpus proves nothing.
func TestUnsafeHTML(t *testing.T) {
	for _, body := range []string{
		`<SCRIPT>x</SCRIPT>`,
		`<a href="jav&#x09;ascript:alert(1)">x</a>`,
		`<a href="&#14;javascript&colon;alert(1)">x</a>`,
		`<a href="//evil.example/">x</a>`,
		`<a href="vbscript:x">x</a>`,
		`<a href="https:api/v1/inbox">x</a>`,
		`<img src="http:/api/v1/emails">`,
		`<img src=x>`,
		`<img srcset="https://example.com/a.png 1x, data:x 2x">`,
		`<b onclick=x>x</b>`,
		`<div style="width: e\78 pression(x)">x</div>`,
		`<div style="background: u/**/rl(x)">x</div>`,
		`<svg><a>x</a></svg>`,
		`<math><mi>x</mi></math>`,
		`<form></form>`,
		`<textarea>x</textarea>`,
		`<table><tr><td background="javascript:x">x</td></tr></table>`,
	} {
		if unsafeHTML(body) == "" {
			t.Errorf("unsafeHTML(%q) = \"\", want a reason", body)
		}
	}
	for _, body := range []string{
		`<p>Hello <b>friend</b></p>`,
		`<a href="https://example.com/?q=javascript" rel="nofollow noopener" target="_blank">javascript</a>`,
		`<a href="mailto:alice@example.com">mail</a>`,
		`<img src="cid:logo@example.com" alt="logo">`,
		`<span style="color: #ff0000; font-weight: bold">red</span>`,
		`<p>javascript&#58;alert(1) is only text here</p>`,
	} {
		if reason := unsafeHTML(body); reason != "" {
			t.Errorf("unsafeHTML(%q) = %q, want \"\"", body, reason)
		}
	}
}

func TestBenignFormattingSurvives(t *testing.T) {
	p := New(0)
	for _, tc := range []struct {
		name, html string
		want       []string // substrings of the sanitized body
	}{
		{"bold", `<b>bold</b>`, []string{`<b>bold</b>`}},
		{"italic", `<i>italic</i>`, []string{`<i>italic</i>`}},
		{"underline", `<u>under</u>`, []string{`<u>under</u>`}},
		{"strong em", `<strong>strong</strong> and <em>em</em>`, []string{`<strong>strong</strong>`, `<em>em</em>`}},
		{"paragraphs and breaks", `<p>one<br>two</p><p>three</p>`, []string{`<p>one<br>two</p>`, `<p>three</p>`}},
		{"headings", `<h1>Title</h1><h2>Sub</h2><h3>Subsub</h3>`, []string{`<h1>Title</h1>`, `<h2>Sub</h2>`, `<h3>Subsub</h3>`}},
		{"unordered list", `<ul><li>a</li><li>b</li></ul>`, []string{`<ul><li>a</li><li>b</li></ul>`}},
		{"ordered list", `<ol><li>first</li></ol>`, []string{`<ol><li>first</li></ol>`}},
		{"blockquote", `<blockquote>quoted</blockquote>`, []string{`<blockquote>quoted</blockquote>`}},
		{"pre code", `<pre><code>x := 1</code></pre>`, []string{`<pre><code>x := 1</code></pre>`}},
		{"table", `<table><tr><td>cell</td><td>two</td></tr></table>`, []string{`<table>`, `<td>cell</td>`, `<td>two</td>`}},
		{"link", `<a href="https://example.com/reset?t=abc">Reset password</a>`, []string{`href="https://example.com/reset?t=abc"`, `>Reset password</a>`}},
		{"mailto link", `<a href="mailto:help@example.com">Write to us</a>`, []string{`href="mailto:help@example.com"`, `>Write to us</a>`}},
		{"image", `<img src="https://example.com/logo.png" alt="Logo">`, []string{`src="https://example.com/logo.png"`, `alt="Logo"`}},
		{"cid image", `<img src="cid:logo@example.com" alt="Logo">`, []string{`src="cid:logo@example.com"`}},
		{"span style", `<span style="color: #ff0000; font-weight: bold">red</span>`, []string{`color: #ff0000`, `font-weight: bold`, `>red</span>`}},
		{"text-align style", `<p style="text-align: center">centered</p>`, []string{`text-align: center`, `>centered</p>`}},
		{"align attribute", `<p align="center">centered</p>`, []string{`align="center"`}},
		{"center element", `<center>middle</center>`, []string{`<center>middle</center>`}},
		{"font color", `<font color="#336699" face="Arial">styled</font>`, []string{`color="#336699"`, `face="Arial"`, `>styled</font>`}},
		{"table layout", `<table bgcolor="#eeeeee" cellpadding="4"><tr><td style="padding: 8px">x</td></tr></table>`, []string{`bgcolor="#eeeeee"`, `cellpadding="4"`, `padding: 8px`}},
		{"entities", `<p>Fish &amp; chips &lt;3 &copy;</p>`, []string{`Fish &amp; chips &lt;3 ©`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := htmlMail(t, tc.html, "quoted-printable", true)
			m, err := p.Parse(raw, "shop@example.com")
			if err != nil {
				t.Fatalf("parse(%q) returned error %v", tc.html, err)
			}
			if m.Body == nil {
				t.Fatalf("parse(%q).Body = nil, want HTML", tc.html)
			}
			for _, want := range tc.want {
				if !strings.Contains(*m.Body, want) {
					t.Errorf("parse(%q).Body = %q, want it to contain %q", tc.html, *m.Body, want)
				}
			}
			if reason := unsafeHTML(*m.Body); reason != "" {
				t.Errorf("parse(%q).Body = %q, unsafe: %s", tc.html, *m.Body, reason)
			}
		})
	}
}
