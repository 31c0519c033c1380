package message

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestLinks(t *testing.T) {
	for _, tc := range []struct {
		body string
		want []Link
	}{
		{"", nil},
		{`<p>no links</p>`, nil},
		{`<p><a href="https://a.test/x?y=1&amp;z=2" rel="nofollow">Confirm
			your   <b>email</b></a> or <a href="https://a.test/u">unsubscribe</a></p>`,
			[]Link{{"https://a.test/x?y=1&z=2", "Confirm your email"}, {"https://a.test/u", "unsubscribe"}}},
		{`<a href="https://a.test/img"><img src="https://a.test/i.png" alt="logo"></a>`, []Link{{"https://a.test/img", ""}}},
		{`<a name="top">anchor</a><a href="">empty</a>`, nil},
		{`<a href="https://a.test/1">one<a href="https://a.test/2">two</a>`, []Link{{"https://a.test/1", "one"}, {"https://a.test/2", "two"}}},
		{`<a href="https://a.test/1">cut at the end`, []Link{{"https://a.test/1", "cut at the end"}}},
		{`<a href="https://a.test/1">x</a><a href="https://a.test/1">y</a>`, []Link{{"https://a.test/1", "x"}, {"https://a.test/1", "y"}}},
	} {
		if got := Links(tc.body); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Links(%q) = %q, want %q", tc.body, got, tc.want)
		}
	}
}

// TestLinksOfParse: the links of a stored body are the stored links, with
// their texts; a plain text body's links (made by Parse) have their URL
// as text.
func TestLinksOfParse(t *testing.T) {
	p := New(0)
	for _, raw := range []string{
		"Subject: html\r\nContent-Type: text/html\r\n\r\n<p>Hi <a href=\"https://a.test/v?t=1&amp;u=2\">Verify</a>, <a href=\"https://a.test/u\">Unsubscribe</a></p>\r\n",
		"Subject: plain\r\nContent-Type: text/plain\r\n\r\nOpen https://a.test/v?t=1&u=2 now.\r\n",
	} {
		m, err := p.Parse([]byte(raw), "")
		if err != nil {
			t.Fatal(err)
		}
		links := Links(*m.Body)
		var urls []string
		for _, l := range links {
			urls = append(urls, l.URL)
		}
		if !reflect.DeepEqual(urls, m.Links) || links[0].Text == "" {
			t.Errorf("Links(body of %q) = %q; want the stored links %q, with texts", raw, links, m.Links)
		}
	}
}

func TestListUnsubscribe(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want []string
	}{
		{"Subject: x\r\n\r\nbody\r\n", nil},
		{"List-Unsubscribe: <mailto:u@list.test?subject=unsubscribe>,\r\n <https://list.test/u?id=1&t=2>\r\nSubject: x\r\n\r\nList-Unsubscribe: <https://body.test/>\r\n",
			[]string{"mailto:u@list.test?subject=unsubscribe", "https://list.test/u?id=1&t=2"}},
		{"List-Unsubscribe: <https://list.test/\r\n long>\r\n\r\n", []string{"https://list.test/long"}},
		{"List-Unsubscribe: <https://list.test/a>\nList-Unsubscribe: <https://list.test/b>\n\n", []string{"https://list.test/a", "https://list.test/b"}},
		{"List-Unsubscribe: https://no-brackets.test/\r\n\r\n", nil},
		{"List-Unsubscribe: <https://no-body.test/>", []string{"https://no-body.test/"}},
		// A broken line before it: read as readEntity reads it.
		{"Subject: x\r\nbroken line\r\nList-Unsubscribe: <https://list.test/c>\r\n\r\n", []string{"https://list.test/c"}},
	} {
		if got := ListUnsubscribe([]byte(tc.raw)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ListUnsubscribe(%q) = %q, want %q", tc.raw, got, tc.want)
		}
	}
	big := "List-Unsubscribe: <https://list.test/x>\r\nX-Big: " + strings.Repeat("a", maxHeaderBytes) + "\r\n\r\n"
	if got := ListUnsubscribe([]byte(big)); got != nil {
		t.Errorf("ListUnsubscribe of a header over 1 MiB = %q, want nil", got)
	}
}

func ExampleLinks() {
	for _, l := range Links(`<p><a href="https://shop.example/verify?t=1">Verify your email</a> · <a href="https://shop.example/u">Unsubscribe</a></p>`) {
		fmt.Printf("%s %q\n", l.URL, l.Text)
	}
	// Output:
	// https://shop.example/verify?t=1 "Verify your email"
	// https://shop.example/u "Unsubscribe"
}
