package codes

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// codeCases are mail as services send it, written from what they publish
// and what their messages look like; text is what /text returns (the
// plain part, or the visible text of an HTML-only message, one line per
// block). want is spec §7's default rule to the letter, including where
// that rule reads a number a person would not call a code.
var codeCases = []struct {
	name    string
	subject *string
	text    string
	want    []string
}{
	// Sign-up and login mail.
	{"device verification", ptr("[GitHub] Please verify your device"),
		"Hey alice!\n\nA sign in attempt requires further verification because we did not recognize your device. " +
			"To complete the sign in, enter the verification code on the unrecognized device.\n\n" +
			"Device: Firefox on Linux\nVerification code: 482913\n\n" +
			"If you did not attempt to sign in to your account, your password may be compromised.",
		[]string{"482913"}},
	{"code in the subject, grouped by a hyphen", ptr("Slack confirmation code: 372-981"),
		"Confirm your email address\nYour confirmation code is below — enter it in your open browser window.\n\n372-981\n\n" +
			"If you didn't request this email, there's nothing to worry about.",
		[]string{"372981"}},
	{"code first in the subject, keyword after it", ptr("123456 is your Instagram code"),
		"Hi alice,\nSomeone tried to log in to your Instagram account. If this was you, please use the following code to confirm your identity:\n\n123456\n\nIf this wasn't you, please reset your password.",
		[]string{"123456"}},
	{"letter prefix and hyphen", ptr("Your Google verification code"),
		"G-482019 is your Google verification code.",
		[]string{"482019"}},
	{"security code, masked address", ptr("Microsoft account security code"),
		"Microsoft account\nSecurity code\nPlease use the following security code for the Microsoft account al***@example.com.\n\n" +
			"Security code: 5821\n\nIf you don't recognize the Microsoft account al***@example.com, you can click here to remove your email address from that account.\n\nThanks,\nThe Microsoft account team",
		[]string{"5821"}},
	{"OTP on its own line", ptr("Amazon password assistance"),
		"To authenticate, please use the following One Time Password (OTP):\n\n384920\n\nDon't share this OTP with anyone. " +
			"Our customer service team will never ask you for your password, OTP, credit card, or banking info.",
		[]string{"384920"}},
	{"Apple ID", nil, "Your Apple ID Code is: 583920. Don't share it with anyone.", []string{"583920"}},
	{"code and the same digits in a link without scheme", nil,
		"Your WhatsApp code: 123-456\nYou can also tap on this link to verify your phone: v.whatsapp.com/123456\nDon't share this code with others",
		[]string{"123456"}},
	{"letters and digits are no code", nil, "Your X confirmation code is 8r7d2kfq", []string{}},
	{"SMS retriever prefix", nil, "<#> 123456 is your code. FA+9qCX9VSu", []string{"123456"}},
	{"markdown bold", nil, "Code: **482913**", []string{"482913"}},
	{"in brackets and quotes", nil, "Login (551902) or \"551903\" or [551904].", []string{"551902", "551903", "551904"}},
	{"backup codes, one pair a line", ptr("Your backup codes"), "Backup codes:\n1. 8372-1946\n2. 5521-0093\nKeep them safe.",
		[]string{"83721946", "55210093"}},
	{"three groups: the first two pair", nil, "Your code: 123 456 789", []string{"123456"}},
	{"no-break spaces between groups (HTML &nbsp;)", nil, "Code:\u00a0482\u00a0913", []string{"482913"}},
	{"4+4 with a space", nil, "Recovery key 1234 5678 — password reset", []string{"12345678"}},
	{"nothing at all", nil, "Welcome aboard! Reply to this email with any questions.", []string{}},
	{"no subject, empty text", nil, "", []string{}},

	// HTML-only mail: the visible text, a line per block.
	{"HTML-only, code in a table cell below its label", ptr("Verify your email"),
		"Acme\nYour verification code\n581 204\nThis code expires in 10 minutes.\n© 2025 Acme Inc. · 548 Market St, San Francisco, CA 94104",
		[]string{"581204", "94104"}},
	{"HTML-only, code inline in a paragraph", nil, "Hi Bob,\nYour code is 7391\nThanks, the team", []string{"7391"}},
	{"HTML-only, button text and footer year", ptr("Confirm your account"),
		"Confirm your account\nConfirm email\nOr enter this code: 660 412\nSent by Example, 2025",
		[]string{"660412"}},

	// Dates, times, years.
	{"ISO date", nil, "Appointment on 2024-03-15 at 10:30. Your confirmation code is 88213.", []string{"88213"}},
	{"dotted date", nil, "Bestellung vom 15.03.2024\nIhr Bestätigungscode: 482193", []string{"482193"}},
	{"slashed date and invoice", nil, "Invoice 2024/0915 dated 03/15/2024", []string{}},
	{"year alone", nil, "© 2024 Example Inc. All rights reserved.", []string{}},
	{"year in words", nil, "March 15, 2024 — see you then", []string{}},
	{"year next to CJK", nil, "2024年3月15日", []string{}},
	{"code and footer year", nil, "Your code: 734519\n\n© 2024 Example Inc.", []string{"734519"}},
	{"PIN that looks like a year", nil, "Your PIN is 2019", []string{"2019"}},
	{"years out of range are numbers", nil, "Room 1899, floor 2100", []string{"1899", "2100"}},
	{"hhmm time before a keyword code", nil, "Departure 0930, code 4471", []string{"4471", "0930"}},
	{"clock times", nil, "Valid from 09:00 to 17:30:00", []string{}},
	{"hhmm range is two groups of 4 joined by a hyphen", nil, "Office hours 0900-1700", []string{"09001700"}},
	{"keyword on the line before a year", nil, "Your code:\n2023", []string{}},
	{"keyword on the line before a number", nil, "Your code:\n482913", []string{"482913"}},
	{"keyword after the year", nil, "2023 is your code", []string{}},
	{"line ends at CR too", nil, "Code:\r\n2022", []string{}},

	// Prices and quantities.
	{"dollars", nil, "Total: $1299.00\nYour order confirmation code is 662901", []string{"662901"}},
	{"euros after a space", nil, "Amount: € 1500\nOTP: 901274", []string{"901274"}},
	{"pounds", nil, "£2500 deposit received. Security code 4410", []string{"4410"}},
	{"yen, Japanese", nil, "¥12000 のお支払い。認証コード: 739201", []string{"739201"}},
	{"reais with a space", nil, "Total: R$ 1500,00\nSeu código de acesso é 302 918", []string{"302918"}},
	{"rupees: not a price sign, but a year without a keyword", nil, "आपका OTP 482193 है।\n₹2000 का भुगतान सफल रहा।", []string{"482193"}},
	{"percent", nil, "Growth of 2500% year over year. Your login code: 9931", []string{"9931"}},
	{"plus quantity", nil, "+1000 points! Your code: 5512", []string{"5512"}},
	{"thousands and decimals", nil, "Balance 12,345 after 1,234.56 and 1234.56", []string{}},
	{"card transaction", nil, "Transaction of USD 1,250.00 at AMAZON on 03/15. OTP 482910, valid 5 min. Do not share.", []string{"482910"}},
	{"card last four", nil, "Payment: Visa •••• 4242\nAmount: $49.00", []string{"4242"}},

	// Order numbers, tracking ids, versions, addresses.
	{"order number with #", nil, "Order #1048576 confirmed.\nYour verification code: 250117", []string{"250117"}},
	{"order number without #", nil, "Order 10485763 has shipped.", []string{"10485763"}},
	{"order and keyword tracking code", nil, "Order 4821 has shipped. Tracking code 77120399", []string{"77120399", "4821"}},
	{"order, then a code too far from its keyword", nil,
		"Order 445566. Your verification code for signing in to Example Cloud Platform is 556677", []string{"445566", "556677"}},
	{"order, then a code near its keyword", nil, "Order 445566. Your code is 556677", []string{"556677", "445566"}},
	{"UPS and DHL tracking ids", nil, "Tracking: 1Z999AA10123456784 / JD014600006281234567", []string{}},
	{"USPS tracking id", nil, "USPS 9400111202000000000000", []string{}},
	{"hashtags", nil, "#2024 #1234 code", []string{}},
	{"version number", nil, "App version 2.14.1023 is out", []string{}},
	{"IP address", nil, "New login from 203.0.113.7 at 10:42", []string{}},
	{"US address with ZIP+4", nil, "Ship to: 1600 Amphitheatre Parkway, Mountain View, CA 94043-1351\nVerification code: 551082",
		[]string{"551082", "1600"}},
	{"German address", nil, "Ihr Code lautet: 884213\nExample GmbH, Musterstraße 12, 10115 Berlin", []string{"884213", "10115"}},
	{"Dutch postal code", nil, "Keizersgracht 123, 1012 AB Amsterdam", []string{"1012"}},
	{"reference glued to letters", nil, "Ref ABC123456, id_123456, 123456abc, 123456_x", []string{}},
	{"a pair that is not alone leaves its second group", nil, "A1234 5678", []string{"5678"}},

	// Phone numbers.
	{"US toll-free", nil, "Questions? Call 1-800-555-0199.\nYour passcode is 615243", []string{"615243"}},
	{"US with parentheses", nil, "Call (415) 555-0132 to verify. Code: 3381", []string{"3381"}},
	{"E.164", nil, "Text us at +15551234567", []string{}},
	{"UK with spaces: the last groups pair", nil, "Need help? +44 20 7946 0958\nYour security code is 204816",
		[]string{"204816", "79460958"}},
	{"US with spaces: 3+3, then a lone 4", nil, "Phone 555 123 4567", []string{"555123", "4567"}},

	// URLs and addresses.
	{"code only in a URL", nil, "Click https://example.com/verify?code=839201 to continue", []string{}},
	{"code and the same in a URL", nil, "Enter 839201 or open https://example.com/v/839201", []string{"839201"}},
	{"URL in angle brackets", nil, "Confirm: <https://example.com/c/1234567>", []string{}},
	{"custom scheme", nil, "Open myapp://verify/123456 on your phone", []string{}},
	{"www without scheme", nil, "Visit WWW.example.com/2024/offer/12345", []string{}},
	{"email addresses", nil, "Sent to user12345@example.com and 98765@example.org, reply to support+1234@example.com", []string{}},
	{"ticket and an address", nil, "Ticket 55231 — reply to help@example.com", []string{"55231"}},

	// Keywords.
	{"keyword within 40 characters", nil, "code " + strings.Repeat("—", 35) + "2023", []string{"2023"}},
	{"keyword at 41 characters", nil, "code " + strings.Repeat("—", 36) + "2023", []string{}},
	{"keyword is a whole word", nil, "BARCODE 2021", []string{}},
	{"keyword in any case", nil, "OTP 2021", []string{"2021"}},
	{"codes", nil, "Your codes: 2020, 2021", []string{"2020", "2021"}},
	{"sign-in", nil, "Sign-in: 1999", []string{"1999"}},
	{"one-time", nil, "One-time key 2042", []string{"2042"}},
	{"2fa", nil, "2FA 2077", []string{"2077"}},
	{"Kelvin sign folds to k", nil, "TO\u212aEN 2048", []string{"2048"}},
	{"security on the same line", nil, "Security 2022", []string{"2022"}},
	{"security on the line before", nil, "Security\n2022", []string{}},

	// Order of the answer.
	{"subject before text", ptr("Code 111222"), "Your code 333444", []string{"111222", "333444"}},
	{"keyword codes before others, subject or not", ptr("Welcome, order 900100"), "Code: 123123", []string{"123123", "900100"}},
	{"a code once, in the first group it reaches", ptr("482913 is your code"), "Code: 482913", []string{"482913"}},
	{"duplicates", nil, "Ref 5555\nCode 7777\nRef again 7777 and 5555", []string{"7777", "5555"}},

	// Lengths and digits.
	{"4 to 8 digits", nil, "123 1234 12345678 123456789", []string{"1234", "12345678"}},
	{"ASCII digits only", nil, "رمز التحقق: ٧٣٩١٥٤ or １２３４５６", []string{}},

	// Other languages' templates: the keywords are English, the digits
	// are universal.
	{"French", ptr("Votre code de vérification"), "Votre code de vérification est : 583 201. Il expire dans 10 minutes.", []string{"583201"}},
	{"Spanish", nil, "Tu código de verificación es 749201", []string{"749201"}},
	{"German, with a time and a date", nil, "Ihr Sicherheitscode lautet 904172. Gültig bis 18:45 Uhr am 12.05.2025.", []string{"904172"}},
	{"Russian", nil, "Ваш код подтверждения: 5821. Никому не сообщайте его.", []string{"5821"}},
	{"Chinese with a full-width colon", nil, "您的验证码是：582913，5分钟内有效。", []string{"582913"}},
	{"Chinese glued to the code: a letter touches it", nil, "验证码123456", []string{}},
	{"Japanese", nil, "認証コード：4829\n有効期限は10分です。", []string{"4829"}},
	{"Korean SMS style", nil, "[Web발신] 인증번호 [284913]를 입력해주세요.", []string{"284913"}},
	{"Arabic", nil, "رمز التحقق الخاص بك هو 739154", []string{"739154"}},
	{"Portuguese letter before the digits", nil, "Código123456", []string{}},
}

func TestFindCodes(t *testing.T) {
	if len(codeCases) < 60 {
		t.Fatalf("%d cases, want at least 60", len(codeCases))
	}
	for _, tc := range codeCases {
		t.Run(tc.name, func(t *testing.T) {
			got := Find(tc.subject, tc.text)
			if got == nil || !slices.Equal(got, tc.want) {
				t.Errorf("Find(%s, %q) = %#v, want %#v", showSubject(tc.subject), tc.text, got, tc.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func showSubject(s *string) string {
	if s == nil {
		return "nil"
	}
	return fmt.Sprintf("%q", *s)
}

func TestMatchCodes(t *testing.T) {
	for _, tc := range []struct {
		pattern, subject, text string
		want                   []string
	}{
		{`\d{6}`, "Code 123456", "Again 123456, then 654321 and 1234567", []string{"123456", "654321"}},
		{`code: (\d+)`, "", "code: 12\ncode: 345 code: 12", []string{"12", "345"}},
		{`[A-Z0-9]{8}`, "Your token", "Token: 8R7D2KFQ", []string{"8R7D2KFQ"}},
		{`\d*`, "", "a1b22", []string{"1", "22"}},     // the empty matches between are skipped
		{`x(\d)?`, "", "x1 x x2", []string{"1", "2"}}, // an unset group is empty
		{`(?i)pin (\d{4})`, "PIN 2019", "pin 2019 pin 7777", []string{"2019", "7777"}},
		{`(\d+)-(\d+)`, "", "12-34", []string{"12"}},        // the first group only
		{`^\d+$`, "1234", "5678", []string{"1234", "5678"}}, // subject and text are matched apart
		{`nothing`, "", "at all", []string{}},
		// Assertions about the character before see it past the first match.
		{`^\d+`, "", "12 34\n56", []string{"12"}},
		{`(?m)^\d+`, "", "12 34\n56", []string{"12", "56"}},
		{`\b\d{2}\b`, "", "a12 34 x567 89", []string{"34", "89"}},
		{`\B\d`, "", "a1 2 b3", []string{"1", "3"}},
		{`\b(\d{6})\b`, "Code 123456", "x123456 654321", []string{"123456", "654321"}},
	} {
		got, err := mustPattern(t, tc.pattern).Match(&tc.subject, tc.text)
		if err != nil || got == nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q.Match(%q, %q) = %#v, %v; want %#v", tc.pattern, tc.subject, tc.text, got, err, tc.want)
		}
	}
	if got, err := mustPattern(t, `\d+`).Match(nil, "1 2"); err != nil || !slices.Equal(got, []string{"1", "2"}) {
		t.Errorf("matchCodes without a subject = %#v, %v; want [1 2]", got, err)
	}
}

// TestMatchCodesWork: a pattern that reads the rest of the text again for
// each match is refused, where FindAll would take hours over 1 MiB; the
// patterns people write stay within the bound.
func TestMatchCodesWork(t *testing.T) {
	line := strings.Repeat("a", 64<<10)
	if got, err := mustPattern(t, `a(?:.*b)?`).Match(nil, line); !errors.Is(err, ErrTooCostly) {
		t.Errorf("`a(?:.*b)?`.Match(64 KiB of a) = %d codes, %v; want %v", len(got), err, ErrTooCostly)
	}
	text := codesBenchText()[:256<<10] // the bound is per character
	for _, p := range []string{`\d`, `\b\d`, `(?s).`, `x*`, `\b`, `code is (\d{6})`, `(?m)^(.*)$`, `(\d+)(?:\D*verify)?`} {
		if _, err := mustPattern(t, p).Match(&text, text); err != nil {
			t.Errorf("%q.Match(256 KiB) = %v, want the codes", p, err)
		}
	}
}

// mustPattern compiles pattern as a request's pattern= is.
func mustPattern(t testing.TB, pattern string) *Pattern {
	t.Helper()
	p, err := Compile(pattern)
	if err != nil || p == nil {
		t.Fatalf("Compile(%q) = %v, %v", pattern, p, err)
	}
	return p
}

// findAllCodes is matchCodes as regexp's FindAll would give it, to check
// that the match-by-match search finds the same.
func findAllCodes(re *regexp.Regexp, srcs ...string) []string {
	out := []string{}
	seen := make(map[string]bool)
	g := min(re.NumSubexp(), 1)
	for _, s := range srcs {
		for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
			if a, b := m[2*g], m[2*g+1]; a < b && !seen[s[a:b]] {
				seen[s[a:b]] = true
				out = append(out, s[a:b])
			}
		}
	}
	return out
}

func TestCompile(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		ok      bool
	}{
		{`\d{6}`, true},
		{strings.Repeat("a", 256), true},
		{strings.Repeat("é", 256), true}, // characters, not bytes
		{strings.Repeat("a", 257), false},
		{`(`, false},
		{`a{1001}`, false},  // RE2 refuses large repeats
		{`(?<=x)\d`, false}, // no lookbehind in RE2
		{"\xff", false},
		{`^\Qa)b`, true}, // an unterminated \Q, and an assertion
	} {
		re, err := Compile(tc.pattern)
		if tc.ok && (err != nil || re == nil || re.re.String() != tc.pattern) {
			t.Errorf("Compile(%q) = %v, %v; want a regexp", tc.pattern, re, err)
		}
		if !tc.ok && !errors.Is(err, ErrBadPattern) {
			t.Errorf("Compile(%q) = %v, %v; want %v", tc.pattern, re, err, ErrBadPattern)
		}
	}
}

// isCodeIn reports whether code is in s as digits, or as two halves joined
// by one of the separators the default rule takes.
func isCodeIn(code, s string) bool {
	if strings.Contains(s, code) {
		return true
	}
	if len(code) == 6 || len(code) == 8 {
		h := len(code) / 2
		for _, sep := range []string{" ", "-", "\u00a0"} {
			if strings.Contains(s, code[:h]+sep+code[h:]) {
				return true
			}
		}
	}
	return false
}

func FuzzCodes(f *testing.F) {
	for _, tc := range codeCases {
		s := ""
		if tc.subject != nil {
			s = *tc.subject
		}
		f.Add(s, tc.text)
	}
	f.Add("", "1234 5678 9012-3456 code\u00a0123\u00a0456 https://x/1234 a@1234 $ 1234 1234%")
	f.Fuzz(func(t *testing.T, subject, text string) {
		got := Find(&subject, text)
		seen := make(map[string]bool)
		for _, code := range got {
			if len(code) < 4 || len(code) > 8 || strings.Trim(code, "0123456789") != "" {
				t.Fatalf("Find(%q, %q) returned %q, not 4 to 8 digits", subject, text, code)
			}
			if !isCodeIn(code, subject) && !isCodeIn(code, text) {
				t.Fatalf("Find(%q, %q) returned %q, which is not in them", subject, text, code)
			}
			if seen[code] {
				t.Fatalf("Find(%q, %q) returned %q twice", subject, text, code)
			}
			seen[code] = true
		}
		// The subject is looked at first: alone, it gives a code for each
		// one it gives with the text.
		if !utf8.ValidString(subject) {
			return
		}
		for _, code := range Find(nil, subject) {
			if !seen[code] {
				t.Fatalf("Find(%q, %q) lacks %q, which the subject has alone", subject, text, code)
			}
		}
	})
}

// codePatternSeeds are patterns and texts where a search from the middle
// of a text could go wrong: assertions, empty matches, invalid UTF-8.
var codePatternSeeds = []struct{ pattern, text string }{
	{`\d*`, "a1b22c"},
	{`\b`, "ab cd"},
	{`\b\w`, "ab cd"},
	{`\B\w*`, "ab cd"},
	{`^|\d`, "1 2"},
	{`(?m)^(\w+)$`, "one\ntwo\n\nthree"},
	{`(?m)$|x`, "x\nx"},
	{`\Ax|y`, "xyx"},
	{`(a)|b`, "abab"},
	{`x*`, "\xffx\xe2\x82x\u00e9x"},
	{`\b.`, "\xff\xfeab\xe2\x82"},
	{`(?i)\bCODE\W+(\d+)`, "code: 1, Code 22, barcode 3"},
	{`(?U)(\d+)`, "123 45"},
	{`^\Qa)b`, "a)b a)b"},
	{`\b\Qa)`, "a) xa) a)"},
}

func TestMatchCodesAsFindAll(t *testing.T) {
	for _, tc := range codePatternSeeds {
		re := regexp.MustCompile(tc.pattern)
		got, err := mustPattern(t, tc.pattern).Match(nil, tc.text)
		if want := findAllCodes(re, tc.text); err != nil || !slices.Equal(got, want) {
			t.Errorf("%q.Match(%q) = %#v, %v; want %#v as FindAll finds", tc.pattern, tc.text, got, err, want)
		}
	}
}

func FuzzMatchCodes(f *testing.F) {
	for _, tc := range codePatternSeeds {
		f.Add(tc.pattern, tc.text)
	}
	f.Fuzz(func(t *testing.T, pattern, text string) {
		p, err := Compile(pattern)
		if err != nil || p == nil {
			return
		}
		got, err := p.Match(nil, text)
		if errors.Is(err, ErrTooCostly) {
			return // the text makes the pattern read it again and again
		}
		if want := findAllCodes(p.re, text); err != nil || !slices.Equal(got, want) {
			t.Fatalf("%q.Match(%q) = %#v, want %#v as FindAll finds", pattern, text, got, want)
		}
	})
}

// codesBenchText returns about 1 MiB of mail-like text dense in digits and
// keywords: every kind of candidate and near-candidate the rule weighs.
func codesBenchText() string {
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for b.Len() < 1<<20 {
		n := r.IntN(100000000)
		switch r.IntN(8) {
		case 0:
			fmt.Fprintf(&b, "Your verification code is %06d.\n", n%1000000)
		case 1:
			fmt.Fprintf(&b, "code %03d-%03d otp %04d %04d pin ", n%1000, n/1000%1000, n%10000, n/10000%10000)
		case 2:
			fmt.Fprintf(&b, "Order #%d on %04d-%02d-%02d at 10:%02d, $%d.%02d ", n, 1900+n%200, n%12+1, n%28+1, n%60, n%10000, n%100)
		case 3:
			fmt.Fprintf(&b, "https://example.com/v/%d?t=%d www.example.com/%d user%d@example.com ", n, n, n, n)
		case 4:
			fmt.Fprintf(&b, "%d %d %d %d\n", n, n%10000, n%1000, n%100000)
		case 5:
			fmt.Fprintf(&b, "1-800-%03d-%04d +44 20 %04d %04d %d%% ", n%1000, n%10000, n%10000, n/10000%10000, n%10000)
		case 6:
			b.WriteString(strings.Repeat("code ", 8))
		default:
			fmt.Fprintf(&b, "Ваш код подтверждения: %d. 验证码：%d，5分钟内有效。\n", n%10000, n%1000000)
		}
	}
	return b.String()
}

func BenchmarkCodes(b *testing.B) {
	text := codesBenchText()
	digits := strings.Repeat("1234 5678-9012 12345 ", (1<<20)/21)
	token := strings.Repeat("x", 1<<20) + " 123456" // one long run of non-space characters
	for _, bc := range []struct {
		name string
		text string
		re   *Pattern
	}{
		{"mixed", text, nil},
		{"digits", digits, nil},
		{"keywords", strings.Repeat("code ", (1<<20)/5) + "123456", nil},
		{"long-token", token, nil},
		{"pattern", text, mustPattern(b, `code is (\d{6})`)},
		{"pattern-looking-behind", text, mustPattern(b, `\bcode is (\d{6})\b`)},
		{"pattern-every-digit", digits, mustPattern(b, `\d`)},
		{"pattern-every-digit-looking-behind", digits, mustPattern(b, `\b\d`)},
		{"pattern-refused", strings.Repeat("a", 1<<20), mustPattern(b, `a(?:.*b)?`)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.text)))
			b.ReportAllocs()
			for b.Loop() {
				if bc.re != nil {
					if _, err := bc.re.Match(nil, bc.text); err != nil && bc.name != "pattern-refused" {
						b.Fatal(err)
					}
				} else {
					Find(nil, bc.text)
				}
			}
		})
	}
}
