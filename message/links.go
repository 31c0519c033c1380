package message

import (
	"bytes"
	"io"
	"strings"

	xhtml "golang.org/x/net/html"
)

// Link is one link of a body: where it goes and what a reader clicks.
type Link struct {
	URL  string // the href, as the stored body has it
	Text string // the visible text inside the <a> element, its white space made single spaces; "" when it has none
}

// Links returns the links of body, a body as Parse stores it (sanitized
// HTML), in order: one Link for each <a href> element, a target that
// appears twice giving two. MCP's wait_for_link reads their texts to put
// the unsubscribe links last (spec §11); the stored links (Message.Links)
// keep the targets alone.
func Links(body string) []Link {
	var (
		links  []Link
		text   []byte
		inLink bool
		attrs  []xhtml.Attribute
	)
	end := func() {
		if inLink {
			links[len(links)-1].Text = strings.Join(strings.Fields(string(text)), " ")
			inLink, text = false, text[:0]
		}
	}
	z := newHTMLTokens(body)
	for {
		switch z.Next() {
		case xhtml.ErrorToken:
			end()
			return links
		case xhtml.TextToken:
			if inLink {
				text = append(text, z.Text()...)
			}
		case xhtml.StartTagToken, xhtml.SelfClosingTagToken:
			if z.Name() != "a" {
				continue
			}
			end() // an <a> inside an <a> closes the first, as browsers read it
			attrs = z.Attrs(attrs[:0])
			for _, a := range attrs {
				if a.Key == "href" && a.Val != "" {
					links = append(links, Link{URL: a.Val})
					inLink = true
					break
				}
			}
		case xhtml.EndTagToken:
			if z.Name() == "a" {
				end()
			}
		}
	}
}

// ListUnsubscribe returns the URLs of the List-Unsubscribe header field
// of the message raw (RFC 2369: a list of <URL>s, mailto: and https:
// alike), in order; nil when it has none. It reads the header alone.
func ListUnsubscribe(raw []byte) []string {
	br := getReader(bytes.NewReader(raw))
	block, err := headerBlock(br, nil)
	putReader(br)
	if err != nil {
		return nil
	}
	h, err := readHeader(block)
	if err != nil && err != io.EOF {
		block, _ = cleanHeader(block) // as readEntity reads a header go-message rejects
		h, _ = readHeader(block)
	}
	var urls []string
	for _, v := range h.Values("List-Unsubscribe") {
		for {
			_, rest, ok := strings.Cut(v, "<")
			if !ok {
				break
			}
			u, after, ok := strings.Cut(rest, ">")
			if !ok {
				break
			}
			// RFC 2369 §2: white space inside the brackets is folding,
			// not part of the URL.
			if u = strings.Join(strings.Fields(u), ""); u != "" {
				urls = append(urls, u)
			}
			v = after
		}
	}
	return urls
}
