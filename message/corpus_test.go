package message

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime/quotedprintable"
	"os"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
	"golang.org/x/text/encoding/unicode"
)

// The corpus test builds a few hundred messages from tables of subjects,
// senders and bodies, each made the way some mailer makes it (charsets,
// encodings, broken headers, nesting, digests, UTF-7, RFC 2231, legacy
// quirks), and knows for each what a reader shows: the subject, the
// sender, and a phrase of the body. Every message is checked against that
// and against invariants, and all of them against one golden file.

// corpusGolden is the golden file of the corpus, keyed by message name.
const corpusGolden = "testdata/corpus.golden.json"

// corpusSize is how many messages the corpus has; the tables' lengths are
// prime to one another in practice, so each combination differs.
const corpusSize = 200

// corpusEnvelope is the MAIL FROM of the corpus: it must show only where
// no From header holds an address.
const corpusEnvelope = "bounce@envelope.test"

// encodeIn returns s in the charset of enc (x/text), or UTF-7 for nil.
func encodeIn(t testing.TB, enc encoding.Encoding, s string) []byte {
	t.Helper()
	if enc == nil {
		return []byte(encodeUTF7(s))
	}
	b, err := enc.NewEncoder().Bytes([]byte(s))
	if err != nil {
		t.Fatalf("encoding %q: %v", s, err)
	}
	return b
}

// qWord returns b as one RFC 2047 Q-encoded word.
func qWord(charset string, b []byte) string {
	var w strings.Builder
	w.WriteString("=?" + charset + "?Q?")
	for _, c := range b {
		switch {
		case c == ' ':
			w.WriteByte('_')
		case c > ' ' && c < 0x7f && c != '=' && c != '?' && c != '_':
			w.WriteByte(c)
		default:
			fmt.Fprintf(&w, "=%02X", c)
		}
	}
	return w.String() + "?="
}

// bWord returns b as one RFC 2047 B-encoded word.
func bWord(charset string, b []byte) string {
	return "=?" + charset + "?B?" + base64.StdEncoding.EncodeToString(b) + "?="
}

func b64(b []byte) string {
	s := base64.StdEncoding.EncodeToString(b)
	var out strings.Builder
	for len(s) > 76 {
		out.WriteString(s[:76] + "\r\n")
		s = s[76:]
	}
	return out.String() + s + "\r\n"
}

func qp(b []byte) string {
	var out bytes.Buffer
	w := quotedprintable.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.String()
}

type corpusSubject struct {
	name   string
	header string  // the Subject line, "" for none
	want   *string // what a reader shows, nil for none
}

type corpusFrom struct {
	name       string
	header     string // the From line, "" for none
	addr, disp string // what a reader shows
}

type corpusBody struct {
	name string
	// tail is the rest of the message: its MIME header lines, the blank
	// line and the body.
	tail string
	want string // a phrase the text shows, "" when there is no text
}

func ptr(s string) *string { return &s }

func corpusSubjects(t testing.TB) []corpusSubject {
	enc := func(e encoding.Encoding, s string) []byte { return encodeIn(t, e, s) }
	utf8Split := []byte("Grüße, 日本")
	return []corpusSubject{
		{"ascii", "Subject: Weekly report\r\n", ptr("Weekly report")},
		{"utf8-q", "Subject: " + qWord("utf-8", []byte("Café ☕ naïve")) + "\r\n", ptr("Café ☕ naïve")},
		{"utf8-b", "Subject: " + bWord("UTF-8", []byte("Party 🎉 tonight")) + "\r\n", ptr("Party 🎉 tonight")},
		{"utf8-b-split-char", "Subject: " + bWord("utf-8", utf8Split[:3]) + "\r\n " + bWord("utf-8", utf8Split[3:11]) + "\r\n " + bWord("utf-8", utf8Split[11:]) + "\r\n", ptr("Grüße, 日本")},
		{"latin1-q-8bit", "Subject: =?iso-8859-1?Q?Die_Hasen_und_die_Fr\xf6sche?=\r\n", ptr("Die Hasen und die Frösche")},
		{"latin1-q", "Subject: " + qWord("ISO-8859-1", enc(charmap.ISO8859_1, "déjà vu, ça va?")) + "\r\n", ptr("déjà vu, ça va?")},
		{"latin1-c1", "Subject: =?iso-8859-1?q?=93Smart=94_quotes_=80?=\r\n", ptr("“Smart” quotes €")},
		{"cp1252-q", "Subject: " + qWord("windows-1252", enc(charmap.Windows1252, "“Quotes” – €5")) + "\r\n", ptr("“Quotes” – €5")},
		{"latin2-lang", "Subject: " + strings.Replace(qWord("iso-8859-2", enc(charmap.ISO8859_2, "Domače strani, Łódź")), "iso-8859-2", "iso-8859-2*sl", 1) + "\r\n", ptr("Domače strani, Łódź")},
		{"latin9-b", "Subject: " + bWord("iso-8859-15", enc(charmap.ISO8859_15, "Prix : 5 €")) + "\r\n", ptr("Prix : 5 €")},
		{"cp1251-b", "Subject: " + bWord("windows-1251", enc(charmap.Windows1251, "Привет, мир")) + "\r\n", ptr("Привет, мир")},
		{"koi8r-q", "Subject: " + qWord("koi8-r", enc(charmap.KOI8R, "Съешь же ещё этих булок")) + "\r\n", ptr("Съешь же ещё этих булок")},
		{"sjis-b", "Subject: " + bWord("shift_jis", enc(japanese.ShiftJIS, "日本語の件名")) + "\r\n", ptr("日本語の件名")},
		{"eucjp-b", "Subject: " + bWord("euc-jp", enc(japanese.EUCJP, "こんにちは世界")) + "\r\n", ptr("こんにちは世界")},
		{"iso2022jp-b", "Subject: " + bWord("ISO-2022-JP", enc(japanese.ISO2022JP, "会議のお知らせ")) + "\r\n", ptr("会議のお知らせ")},
		{"gb2312-b", "Subject: " + bWord("gb2312", enc(simplifiedchinese.GBK, "你好，世界")) + "\r\n", ptr("你好，世界")},
		{"big5-b", "Subject: " + bWord("big5", enc(traditionalchinese.Big5, "繁體中文測試")) + "\r\n", ptr("繁體中文測試")},
		{"ksc-b", "Subject: " + bWord("ks_c_5601-1987", enc(korean.EUCKR, "안녕하세요")) + "\r\n", ptr("안녕하세요")},
		{"utf7-q", "Subject: " + qWord("utf-7", enc(nil, "Grüße aus 日本")) + "\r\n", ptr("Grüße aus 日本")},
		{"utf7-alias-b", "Subject: " + bWord("unicode-1-1-utf-7", enc(nil, "Ça marche +1")) + "\r\n", ptr("Ça marche +1")},
		{"raw-utf8", "Subject: Grüße aus Köln ✓\r\n", ptr("Grüße aus Köln ✓")},
		{"raw-latin1", "Subject: Gr\xfc\xdfe aus K\xf6ln\r\n", ptr("Grüße aus Köln")},
		{"raw-cp1252", "Subject: \x93Hello\x94 \x96 world\r\n", ptr("“Hello” – world")},
		{"mixed-text", "Subject: Re: [list] " + qWord("utf-8", []byte("Zürich")) + " meeting\r\n", ptr("Re: [list] Zürich meeting")},
		{"unknown-word", "Subject: =?utf-8?Q?caf=C3=A9?= and =?x-unknown?Q?abc?=\r\n", ptr("café and =?x-unknown?Q?abc?=")},
		{"unknown-only", "Subject: =?x-klingon?Q?Qapla=27?=\r\n", ptr("=?x-klingon?Q?Qapla=27?=")},
		{"lowercase-q", "Subject: =?utf-8?q?lower_case_q?=\r\n", ptr("lower case q")},
		{"folded-words", "Subject: =?utf-8?Q?This_is_a_long_?=\r\n\t=?utf-8?Q?subject_that_was_?=\r\n =?utf-8?Q?folded?=\r\n", ptr("This is a long subject that was folded")},
		{"no-space", "Subject: foo=?utf-8?q?bar?=baz\r\n", ptr("foobarbaz")},
		{"q-escapes", "Subject: =?utf-8?Q?what=3F_=5Fx=5F=20and=3Dy?=\r\n", ptr("what? _x_ and=y")},
		{"b-unpadded", "Subject: =?utf-8?B?Y2Fmw6k?=\r\n", ptr("café")},
		{"two-charsets", "Subject: =?iso-8859-1?q?caf=E9?= =?utf-8?q?_cr=C3=A8me?=\r\n", ptr("café crème")},
		{"q-space", "Subject: =?utf-8?q?Sender forgot to encode?=\r\n", ptr("Sender forgot to encode")},
		{"empty", "Subject: \r\n", ptr("")},
		{"absent", "", nil},
		{"lowercase-key", "subject: =?UTF-8?Q?Gro=C3=9Fbuchstaben?=\r\n", ptr("Großbuchstaben")},
		{"spaces-before-colon", "Subject : Outlook Express 5\r\n", ptr("Outlook Express 5")},
	}
}

func corpusFroms(t testing.TB) []corpusFrom {
	sjis := encodeIn(t, japanese.ShiftJIS, "山田太郎")
	return []corpusFrom{
		{"name-angle", "From: Ann Example <ann@example.test>\r\n", "ann@example.test", "Ann Example"},
		{"bare", "From: bare@example.test\r\n", "bare@example.test", ""},
		{"quoted-comma", "From: \"Doe, Jane\" <jane@example.test>\r\n", "jane@example.test", "Doe, Jane"},
		{"encoded-utf8", "From: =?utf-8?q?Ren=C3=A9e_Dupont?= <renee@example.test>\r\n", "renee@example.test", "Renée Dupont"},
		{"encoded-latin1-8bit", "From: =?iso-8859-1?Q?J=FCrgen_M\xfcller?= <juergen@example.test>\r\n", "juergen@example.test", "Jürgen Müller"},
		{"quoted-latin1-8bit", "From: \"M\xfcller, Hans\" <hans@example.test>\r\n", "hans@example.test", "Müller, Hans"},
		{"quoted-utf8-raw", "From: \"Müller, Hans\" <hans@example.test>\r\n", "hans@example.test", "Müller, Hans"},
		{"unknown-charset-name", "From: =?x-klingon?Q?Worf?= <worf@example.test>\r\n", "worf@example.test", "=?x-klingon?Q?Worf?="},
		{"rfc5322-a5", "From: Pete(A wonderful \\) chap) <pete(his account)@silly.test(his host)>\r\n", "pete@silly.test", "Pete"},
		{"comment-name", "From: jdoe@example.test (John Doe)\r\n", "jdoe@example.test", "John Doe"},
		{"group", "From: Team: Bob <bob@example.test>, carol@example.test;\r\n", "bob@example.test", "Bob"},
		{"route", "From: <@relay.test:route@example.test>\r\n", "route@example.test", ""},
		{"unterminated-angle", "From: Ann <ann2@example.test\r\n", "ann2@example.test", "Ann"},
		{"empty-group", "From: undisclosed-recipients:;\r\n", corpusEnvelope, ""},
		{"absent", "", corpusEnvelope, ""},
		{"garbage", "From: not an address\r\n", corpusEnvelope, ""},
		{"null", "From: <>\r\n", corpusEnvelope, ""},
		{"sjis-name", "From: " + bWord("Shift_JIS", sjis) + " <yamada@example.test>\r\n", "yamada@example.test", "山田太郎"},
		{"utf7-name", "From: " + qWord("utf-7", []byte(encodeUTF7("François"))) + " <fr@example.test>\r\n", "fr@example.test", "François"},
		{"encoded-in-quotes", "From: \"Shop =?utf-8?q?M=C3=BCller?=\" <shop@example.test>\r\n", "shop@example.test", "Shop Müller"},
		{"comment-before-angle", "From: Pat (the boss) <pat@example.test>\r\n", "pat@example.test", "Pat"},
		{"lowercase-key", "from: lower@example.test\r\n", "lower@example.test", ""},
		{"list", "From: first@example.test, Second <second@example.test>\r\n", "first@example.test", ""},
		{"quoted-local", "From: \"pat doe\"@example.test\r\n", "\"pat doe\"@example.test", ""},
		{"eai", "From: Jörg <jörg@exämple.test>\r\n", "jörg@exämple.test", "Jörg"},
		{"folded", "From: \"A very long display name\"\r\n\t<folded@example.test>\r\n", "folded@example.test", "A very long display name"},
		{"name-no-angle", "From: Ann ann3@example.test\r\n", "ann3@example.test", "Ann"},
		{"encoded-lang", "From: =?iso-8859-2*sl?Q?Ga=B9per?= <gasper@example.test>\r\n", "gasper@example.test", "Gašper"},
		{"cp1252-quoted", "From: \"\x93Quoted\x94 Name\" <q@example.test>\r\n", "q@example.test", "“Quoted” Name"},
	}
}

func corpusBodies(t testing.TB) []corpusBody {
	enc := func(e encoding.Encoding, s string) []byte { return encodeIn(t, e, s) }
	utf16 := encodeIn(t, unicode.UTF16(unicode.BigEndian, unicode.UseBOM), "UTF-16 text with ünïcödé")
	return []corpusBody{
		{"plain-ascii", "Content-Type: text/plain; charset=us-ascii\r\nContent-Transfer-Encoding: 7bit\r\n\r\nHello in plain ASCII.\r\n", "Hello in plain ASCII."},
		{"plain-utf8-qp", "Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" + qp([]byte("Crème brûlée for everyone ☺\r\n")), "Crème brûlée for everyone ☺"},
		{"plain-utf8-b64", "Content-Type: text/plain; charset=\"UTF-8\"\r\nContent-Transfer-Encoding: base64\r\n\r\n" + b64([]byte("Base64 body: naïve café.\r\n")), "Base64 body: naïve café."},
		{"plain-latin1-8bit", "Content-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: 8bit\r\n\r\n" + string(enc(charmap.ISO8859_1, "Ein Märchen von Fröschen.\r\n")), "Ein Märchen von Fröschen."},
		{"plain-cp1252-qp", "Content-Type: text/plain; charset=windows-1252\r\nContent-Transfer-Encoding: Quoted-Printable\r\n\r\n" + qp(enc(charmap.Windows1252, "“Smart” quotes – and €.\r\n")), "“Smart” quotes – and €."},
		{"plain-koi8r-b64", "Content-Type: text/plain; charset=koi8-r\r\nContent-Transfer-Encoding: base64\r\n\r\n" + b64(enc(charmap.KOI8R, "Привет из KOI8-R.\r\n")), "Привет из KOI8-R."},
		{"plain-sjis-b64", "Content-Type: text/plain; charset=Shift_JIS\r\nContent-Transfer-Encoding: base64\r\n\r\n" + b64(enc(japanese.ShiftJIS, "お世話になっております。\r\n")), "お世話になっております。"},
		{"plain-iso2022jp", "Content-Type: text/plain; charset=ISO-2022-JP\r\nContent-Transfer-Encoding: 7bit\r\n\r\n" + string(enc(japanese.ISO2022JP, "会議は明日です。\r\n")), "会議は明日です。"},
		{"plain-big5-b64", "Content-Type: text/plain; charset=big5\r\nContent-Transfer-Encoding: base64\r\n\r\n" + b64(enc(traditionalchinese.Big5, "繁體中文內容。\r\n")), "繁體中文內容。"},
		{"plain-gb2312-b64", "Content-Type: text/plain; charset=gb2312\r\nContent-Transfer-Encoding: base64\r\n\r\n" + b64(enc(simplifiedchinese.GBK, "简体中文内容。\r\n")), "简体中文内容。"},
		{"plain-utf7", "Content-Type: text/plain; charset=utf-7\r\n\r\n" + encodeUTF7("Outlook 2000 wrote this: Grüße, 1 + 1 = 2 ☺\r\n"), "Outlook 2000 wrote this: Grüße, 1 + 1 = 2 ☺"},
		{"plain-utf7-alias-qp", "Content-Type: text/plain; charset=\"unicode-1-1-utf-7\"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" + qp([]byte(encodeUTF7("Déjà vu in UTF-7.\r\n"))), "Déjà vu in UTF-7."},
		{"plain-undeclared-8bit", "Content-Type: text/plain\r\n\r\nUndeclared bytes: caf\xe9 cr\xe8me.\r\n", "Undeclared bytes: café crème."},
		{"plain-unknown-charset", "Content-Type: text/plain; charset=x-klingon\r\n\r\nThe words are ASCII all the same.\r\n", "The words are ASCII all the same."},
		{"plain-utf16", "Content-Type: text/plain; charset=utf-16\r\nContent-Transfer-Encoding: base64\r\n\r\n" + b64(utf16), "UTF-16 text with ünïcödé"},
		{"plain-comment-param", "Content-Type: text/plain; charset=us-ascii (Plain text)\r\n\r\nA comment in the Content-Type.\r\n", "A comment in the Content-Type."},
		{"plain-upper", "CONTENT-TYPE: TEXT/PLAIN; CHARSET=ISO-8859-15\r\nCONTENT-TRANSFER-ENCODING: QUOTED-PRINTABLE\r\n\r\nPrix : 5 =A4.\r\n", "Prix : 5 €."},
		{"plain-no-mime", "\r\nNo MIME headers at all, as in 1990.\r\n", "No MIME headers at all, as in 1990."},
		{"plain-2231-charset", "Content-Type: text/plain; charset*=us-ascii'en'iso-8859-2\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n=A3=F3d=BC to the RFC 2231 charset.\r\n", "Łódź to the RFC 2231 charset."},
		{"html-utf8", "Content-Type: text/html; charset=utf-8\r\n\r\n<html><body><p>HTML only: <b>bold</b> and café.</p></body></html>\r\n", "HTML only: bold and café."},
		{"html-meta-charset", "Content-Type: text/html\r\n\r\n<html><head><meta charset=\"windows-1251\"></head><body>" + string(enc(charmap.Windows1251, "Кириллица в HTML.")) + "</body></html>\r\n", "Кириллица в HTML."},
		{"html-utf7", "Content-Type: text/html; charset=utf-7\r\n\r\n" + encodeUTF7("<p>UTF-7 HTML: ça va</p><script>alert(1)</script>\r\n"), "UTF-7 HTML: ça va"},
		{"alternative", "Content-Type: multipart/alternative; boundary=\"alt-1\"\r\n\r\n--alt-1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nPlain alternative.\r\n--alt-1\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>HTML alternative.</p>\r\n--alt-1--\r\n", "HTML alternative."},
		{"mixed-attachment", "Content-Type: multipart/mixed; boundary=mix\r\n\r\nThis is a multi-part message in MIME format.\r\n\r\n--mix\r\nContent-Type: text/plain\r\n\r\nSee the attached file.\r\n--mix\r\nContent-Type: application/pdf; name=\"a.pdf\"\r\nContent-Disposition: attachment; filename=\"a.pdf\"\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--mix--\r\nEpilogue text nobody shows.\r\n", "See the attached file."},
		{"nested-related", "Content-Type: multipart/mixed; boundary=\"----=_NextPart_000_0001_01C0ABCD.12345678\"\r\n\r\n------=_NextPart_000_0001_01C0ABCD.12345678\r\nContent-Type: multipart/related; boundary=rel; type=\"multipart/alternative\"\r\n\r\n--rel\r\nContent-Type: multipart/alternative; boundary=alt\r\n\r\n--alt\r\nContent-Type: text/plain\r\n\r\nNested plain.\r\n--alt\r\nContent-Type: text/html\r\n\r\n<p>Nested <img src=\"cid:logo\"> HTML.</p>\r\n--alt--\r\n--rel\r\nContent-Type: image/png\r\nContent-ID: <logo>\r\nContent-Transfer-Encoding: base64\r\n\r\niVBORw0KGgo=\r\n--rel--\r\n------=_NextPart_000_0001_01C0ABCD.12345678--\r\n", "Nested HTML."},
		{"rfc2231-boundary", "Content-Type: multipart/alternative; boundary*=iso-8859-1''XYZ\r\n\r\n--XYZ\r\nContent-Type: text/plain\r\n\r\nBoundary in RFC 2231 form.\r\n--XYZ--\r\n", "Boundary in RFC 2231 form."},
		{"rfc2231-boundary-ascii", "Content-Type: multipart/mixed; boundary*=ansi-x3.4-1968''ABC\r\n\r\n--ABC\r\nContent-Type: text/plain\r\n\r\nBoundary labelled ANSI_X3.4-1968.\r\n--ABC--\r\n", "Boundary labelled ANSI_X3.4-1968."},
		{"rfc2231-continuation", "Content-Type: multipart/mixed;\r\n boundary*0*=utf-8''b1%5F;\r\n boundary*1=\"two\"\r\n\r\n--b1_two\r\nContent-Type: text/plain\r\n\r\nBoundary in two sections.\r\n--b1_two--\r\n", "Boundary in two sections."},
		{"digest", "Content-Type: multipart/digest; boundary=dig\r\n\r\n--dig\r\n\r\nFrom: Alice <alice@example.test>\r\nSubject: First\r\n\r\nText of the first digest message.\r\n--dig\r\n\r\nFrom: Bob <bob@example.test>\r\nSubject: Second\r\n\r\nText of the second.\r\n--dig--\r\n", "Text of the first digest message."},
		{"digest-8bit-embedded", "Content-Type: multipart/digest; boundary=dig\r\n\r\n--dig\r\n\r\nFrom: Ren\xe9 <rene@example.test>\r\nContent-Type: text/plain; charset=iso-8859-1\r\n\r\nCh\xe8re lectrice.\r\n--dig--\r\n", "Chère lectrice."},
		{"rfc822-inline", "Content-Type: message/rfc822\r\n\r\nFrom: Carol <carol@example.test>\r\nSubject: Original\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nThe forwarded message's text.\r\n", "The forwarded message's text."},
		{"rfc822-after-text", "Content-Type: multipart/mixed; boundary=fw\r\n\r\n--fw\r\nContent-Type: text/plain\r\n\r\nMy note above the forward.\r\n--fw\r\nContent-Type: message/rfc822\r\n\r\nFrom: Carol <carol@example.test>\r\nContent-Type: text/html\r\n\r\n<p>Forwarded HTML.</p>\r\n--fw--\r\n", "My note above the forward."},
		{"report", "Content-Type: multipart/report; report-type=delivery-status; boundary=rep\r\n\r\n--rep\r\nContent-Type: text/plain\r\n\r\nYour message could not be delivered.\r\n--rep\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.example.test\r\n\r\nFinal-Recipient: rfc822; gone@example.test\r\nAction: failed\r\nStatus: 5.1.1\r\n--rep\r\nContent-Type: text/rfc822-headers\r\n\r\nFrom: me@example.test\r\nSubject: lost\r\n--rep--\r\n", "Your message could not be delivered."},
		{"signed", "Content-Type: multipart/signed; micalg=pgp-sha256; protocol=\"application/pgp-signature\"; boundary=\"sig\"\r\n\r\n--sig\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\nSigned words.\r\n--sig\r\nContent-Type: application/pgp-signature; name=\"signature.asc\"\r\n\r\n-----BEGIN PGP SIGNATURE-----\r\nAAAA\r\n-----END PGP SIGNATURE-----\r\n--sig--\r\n", "Signed words."},
		{"no-blank-line", "Content-Type: text/plain\r\nThis body follows the header with no blank line.\r\n", "This body follows the header with no blank line."},
		{"no-blank-line-last", "X-Mailer: Hasty 1.0\r\nNo blank line and no MIME either.\r\nSecond line.\r\n", "No blank line and no MIME either."},
		{"mbox-from-line", "Content-Type: text/plain\r\n>From the archive, with a quoted From line.\r\n", ">From the archive, with a quoted From line."},
		{"empty-alternative", "Content-Type: multipart/alternative; boundary=e\r\n\r\n--e\r\nContent-Type: text/plain\r\n\r\n\r\n--e\r\nContent-Type: text/html\r\n\r\n<p>Only the HTML has words.</p>\r\n--e--\r\n", "Only the HTML has words."},
		{"text-attachment-only", "Content-Type: text/plain\r\nContent-Disposition: attachment; filename=notes.txt\r\n\r\nA file, not a body.\r\n", ""},
		{"image-only", "Content-Type: image/gif\r\nContent-Transfer-Encoding: base64\r\n\r\nR0lGODlhAQABAAAAACw=\r\n", ""},
		{"bad-base64", "Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\nR29vZCBzdGFydA==\r\n!!!not base64!!!\r\n", "Good start"},
		{"unknown-cte", "Content-Type: text/plain\r\nContent-Transfer-Encoding: x-uuencode-ish\r\n\r\nUnknown transfer encoding, readable text.\r\n", "Unknown transfer encoding, readable text."},
	}
}

// rawEncodedWord matches an encoded word left in decoded text.
var rawEncodedWord = regexp.MustCompile(`=\?[^?\s]+\?[bBqQ]\?[^?]*\?=`)

// corpusMessage builds message i of the corpus, and says what a reader
// shows of it.
func corpusMessage(subjects []corpusSubject, froms []corpusFrom, bodies []corpusBody, i int) (name string, raw []byte, s corpusSubject, f corpusFrom, b corpusBody) {
	s, f, b = subjects[i%len(subjects)], froms[i%len(froms)], bodies[i%len(bodies)]
	name = fmt.Sprintf("%03d-%s-%s-%s", i, s.name, f.name, b.name)
	var m strings.Builder
	if i%5 == 0 {
		m.WriteString("From mbox@example.test Thu Jan  1 00:00:00 2026\r\n")
	}
	m.WriteString("Received: from mx.example.test by burner.test; Thu, 1 Jan 2026 00:00:00 +0000\r\n")
	m.WriteString(f.header)
	m.WriteString("To: test@burner.test\r\n")
	m.WriteString(s.header)
	fmt.Fprintf(&m, "Message-ID: <corpus-%d@example.test>\r\n", i)
	if i%3 == 0 {
		m.WriteString("X-Mailer: Microsoft Outlook Express 6.00.2900.2180\r\nMIME-Version: 1.0\r\n")
	}
	m.WriteString(b.tail)
	raw = []byte(m.String())
	if i%2 == 1 {
		raw = bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n")) // Unix mailers
	}
	return name, raw, s, f, b
}

func TestParseCorpus(t *testing.T) {
	subjects, froms, bodies := corpusSubjects(t), corpusFroms(t), corpusBodies(t)
	p := New(0)
	got := map[string]golden{}
	for i := range corpusSize {
		name, raw, s, f, b := corpusMessage(subjects, froms, bodies, i)
		m, err := p.Parse(raw, corpusEnvelope)
		if err != nil {
			t.Errorf("%s: parse returned error %v", name, err)
			continue
		}
		got[name] = golden{m.From, m.FromName, m.Subject, m.Body, m.Text}

		switch {
		case s.want == nil && m.Subject != nil:
			t.Errorf("%s: Subject = %q, want none", name, *m.Subject)
		case s.want != nil && (m.Subject == nil || *m.Subject != *s.want):
			t.Errorf("%s: Subject = %s, want %q", name, show(m.Subject), *s.want)
		}
		if m.From != f.addr || m.FromName != f.disp {
			t.Errorf("%s: From, FromName = %q, %q, want %q, %q", name, m.From, m.FromName, f.addr, f.disp)
		}
		// Invariants, whatever the tables say.
		for field, v := range map[string]string{"Subject": deref(m.Subject), "FromName": m.FromName} {
			for _, w := range rawEncodedWord.FindAllString(v, -1) {
				if word, _, ok := parseEncodedWord(w); ok {
					if _, known := decodeCharset(nil, word.charset); known {
						t.Errorf("%s: %s = %q keeps the encoded word %q, whose charset is known", name, field, v, w)
					}
				}
			}
		}
		if f.addr != corpusEnvelope && m.From == corpusEnvelope {
			t.Errorf("%s: From is the envelope sender though the From header holds %q", name, f.addr)
		}
		switch {
		case b.want == "" && m.Body != nil:
			t.Errorf("%s: Body = %q, want none", name, *m.Body)
		case b.want != "" && m.Body == nil:
			t.Errorf("%s: Body = nil, want a body: the message has a text part", name)
		case b.want != "" && !strings.Contains(m.Text, b.want):
			t.Errorf("%s: Text = %q, want it to contain %q", name, m.Text, b.want)
		}
	}
	if t.Failed() {
		return
	}

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(got); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(corpusGolden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	var want map[string]golden
	if err := json.Unmarshal(mustRead(t, corpusGolden), &want); err != nil {
		t.Fatalf("reading %s: %v", corpusGolden, err)
	}
	if len(want) != len(got) {
		t.Errorf("%s has %d messages, the corpus %d", corpusGolden, len(want), len(got))
	}
	for name, g := range got {
		if w, ok := want[name]; !ok {
			t.Errorf("%s: not in %s", name, corpusGolden)
		} else if a, b := marshalGolden(t, g), marshalGolden(t, w); !bytes.Equal(a, b) {
			t.Errorf("%s: parse =\n%s\nwant (%s)\n%s", name, a, corpusGolden, b)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestCorpusCoversTables checks that every row of the three tables is in
// some corpus message, so that a row added past corpusSize is not silently
// left out.
func TestCorpusCoversTables(t *testing.T) {
	subjects, froms, bodies := corpusSubjects(t), corpusFroms(t), corpusBodies(t)
	for _, n := range []int{len(subjects), len(froms), len(bodies)} {
		if n > corpusSize {
			t.Errorf("a table has %d rows, more than the corpus's %d messages", n, corpusSize)
		}
	}
	if corpusSize < 150 {
		t.Errorf("corpusSize = %d, want at least 150", corpusSize)
	}
}
