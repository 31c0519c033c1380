package server

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"burner/message"
	"burner/storage"
)

// The MCP waits (spec §11 amended): wait_for_email, and wait_for_code and
// wait_for_link, which give the value an agent came for rather than the
// message. Each is the API's long poll (waitList): woken by deliveries, on
// this node or another (spec §10), never by a poll, and ended before the
// common MCP clients give up on a call (60 s). A client that sent a
// progress token hears from the wait every few seconds; a wait that ends
// empty says which since to call it again with, so that a mail that comes
// between two calls is not missed.

const (
	// mcpMaxWait is the longest a wait may take: under the 60 s after
	// which common MCP clients give up on a call.
	mcpMaxWait = 50 * time.Second
	// mcpDefaultWait is a wait's timeout_s when not given.
	mcpDefaultWait = 25 * time.Second
	// mcpProgressEvery is how often a wait sends a progress notification
	// to a client that asked for them (spec §11: at least every 5 s).
	mcpProgressEvery = 4 * time.Second
	// mcpMaxLink is the longest link wait_for_link gives: it gives links
	// whole, and a result is at most mcpMaxResult bytes.
	mcpMaxLink = 16_000
)

// waited is one wait as its tool was asked it.
type waited struct {
	inbox   string        // the local part
	timeout time.Duration // how long it may take
	began   time.Time
	// since is the since to call the tool again with when nothing came:
	// the one given, or the Unix time at which the wait began. Every
	// email that came before the wait ended was looked at, so waiting
	// again from there misses none.
	since float64
}

// waitTimeout returns timeout_s as a duration: mcpDefaultWait when not
// given.
func waitTimeout(timeoutS *int) (time.Duration, error) {
	if timeoutS == nil {
		return mcpDefaultWait, nil
	}
	if n := *timeoutS; n < 1 || time.Duration(n)*time.Second > mcpMaxWait {
		return 0, toolError("'timeout_s' must be an integer from 1 to 50.")
	}
	return time.Duration(*timeoutS) * time.Second, nil
}

// newWaited returns the wait of inbox for timeoutS seconds, after since
// when given, beginning now.
func newWaited(inbox string, since *float64, timeoutS *int) (waited, error) {
	timeout, err := waitTimeout(timeoutS)
	if err != nil {
		return waited{}, err
	}
	w := waited{inbox: inbox, timeout: timeout, began: time.Now()}
	w.since = float64(w.began.Unix())
	if since != nil {
		w.since = *since
	}
	return w, nil
}

// none is the text of a wait that ended empty: what did not come, and
// the call that goes on waiting.
func (w waited) none(what, tool string) string {
	return what + " arrived in " + w.inbox + " within " + strconv.Itoa(int(w.timeout/time.Second)) + " s. " +
		"To keep waiting without missing one, call " + tool + " again with since: " + strconv.FormatFloat(w.since, 'f', -1, 64) + ".\n"
}

// waitFor waits for the newest email of q that accept takes (any, when
// accept is nil), until w's timeout; it reports false when none came. It
// looks at the newest maxLimit matches at first, and then at each email
// that arrives. An email accept cannot read (deleted meanwhile) is not
// taken.
func (s *Server) waitFor(ctx context.Context, w waited, q storage.Query, accept func(context.Context, storage.Email) (bool, error)) (storage.Email, bool, error) {
	defer s.reportProgress(ctx, w)()
	q.Limit = maxLimit
	if accept == nil {
		q.Limit = 1
	}
	deadline := w.began.Add(w.timeout)
	for {
		emails, err := s.waitList(ctx, q, time.Until(deadline))
		if err != nil || len(emails) == 0 {
			return storage.Email{}, false, err
		}
		for _, e := range emails {
			if accept == nil {
				return e, true, nil
			}
			ok, err := accept(ctx, e)
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				return storage.Email{}, false, err
			}
			if ok {
				return e, true, nil
			}
		}
		if !time.Now().Before(deadline) {
			return storage.Email{}, false, nil
		}
		// None of these: from now on, only what arrives after them.
		// Emails of an inbox are received at strictly increasing times.
		if newest := emails[0].ReceivedAt; newest.After(q.Since) {
			q.Since = newest
		}
	}
}

// reportProgress sends a progress notification every mcpProgressEvery
// (Server.progressEvery in tests) while a wait runs, when the tool call
// in ctx came with a progress token; call the function it returns when
// the wait ends.
func (s *Server) reportProgress(ctx context.Context, w waited) (stop func()) {
	req, _ := ctx.Value(mcpCallKey{}).(*mcp.CallToolRequest)
	if req == nil || req.Session == nil || req.Params == nil || req.Params.GetProgressToken() == nil {
		return func() {}
	}
	token := req.Params.GetProgressToken()
	every := s.progressEvery
	if every <= 0 {
		every = mcpProgressEvery
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		total := strconv.Itoa(int(w.timeout / time.Second))
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-t.C:
				elapsed := now.Sub(w.began)
				err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token,
					Progress:      math.Round(elapsed.Seconds()*10) / 10,
					Total:         w.timeout.Seconds(),
					Message:       "Waiting for mail in " + w.inbox + ": " + strconv.Itoa(int(elapsed/time.Second)) + " of " + total + " s.",
				})
				if err != nil {
					s.log.DebugContext(ctx, "progress notification failed", "err", err)
				}
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

type waitForCodeIn struct {
	Inbox    string   `json:"inbox" jsonschema:"the inbox: the local part of the address (before the @), or the whole address"`
	Subject  string   `json:"subject,omitempty" jsonschema:"only an email whose subject contains this (any case)"`
	From     string   `json:"from,omitempty" jsonschema:"only an email whose sender's address or name contains this (any case), like noreply@example.com"`
	Since    *float64 `json:"since,omitempty" jsonschema:"only an email received after this Unix time, in seconds"`
	Pattern  string   `json:"pattern,omitempty" jsonschema:"an RE2 regular expression to find the code with instead of the built-in rule (its first group when it has one)"`
	TimeoutS *int     `json:"timeout_s,omitempty" jsonschema:"how long to wait, 1 to 50 seconds (default 25)"`
}

type waitForCodeOut struct {
	Arrived bool     `json:"arrived" jsonschema:"false when no email with a code arrived in time"`
	Code    string   `json:"code,omitempty" jsonschema:"the most likely code, exactly as written"`
	Codes   []string `json:"codes,omitempty" jsonschema:"every code of the email, most likely first (at most 10)"`
	EmailID string   `json:"email_id,omitempty" jsonschema:"the email it came in, for read_email"`
	Subject *string  `json:"subject,omitempty" jsonschema:"that email's subject, as the sender wrote it"`
	Since   *float64 `json:"since,omitempty" jsonschema:"when none arrived: the since to wait again with, so that no email is missed"`
	waited  waited
}

func (o waitForCodeOut) text(f fence) string {
	if !o.Arrived {
		return o.waited.none("No email with a code", "wait_for_code")
	}
	var b strings.Builder
	b.WriteString("A code arrived in " + o.waited.inbox + ". " + f.notice() + "\n")
	b.WriteString("code: " + f.inline(o.Code) + "\n")
	if len(o.Codes) > 1 {
		writeList(&b, f, "all its codes (most likely first):", len(o.Codes), func(i int) string { return o.Codes[i] + "\n" })
	}
	writeFoundIn(&b, f, o.EmailID, o.Subject)
	return b.String()
}

// writeFoundIn writes the email a wait found its value in.
func writeFoundIn(b *strings.Builder, f fence, id string, subject *string) {
	b.WriteString("email: " + id + "\n")
	writeSubjectLine(b, f, "", subject)
}

// toolWaitForCode waits for an email with a code (spec §7's, or the
// pattern's), and gives its codes: the emails that match the filters but
// have none are passed over.
func (s *Server) toolWaitForCode(ctx context.Context, in waitForCodeIn) (waitForCodeOut, error) {
	inbox, err := s.inboxArg(in.Inbox)
	if err != nil {
		return waitForCodeOut{}, err
	}
	q, err := toolQuery(inbox, in.Subject, "", in.From, in.Since, nil)
	if err != nil {
		return waitForCodeOut{}, err
	}
	p, err := codesPattern(in.Pattern)
	if err != nil {
		return waitForCodeOut{}, err
	}
	w, err := newWaited(inbox, in.Since, in.TimeoutS)
	if err != nil {
		return waitForCodeOut{}, err
	}
	var found []string
	e, ok, err := s.waitFor(ctx, w, q, func(ctx context.Context, e storage.Email) (bool, error) {
		c, err := s.db.Content(ctx, e.ID)
		if err != nil {
			return false, err
		}
		found, err = emailCodes(p, e.Subject, c.Plain)
		return len(found) > 0, err
	})
	if err != nil || !ok {
		return waitForCodeOut{Since: &w.since, waited: w}, err
	}
	if len(found) > mcpMaxCodes {
		found = found[:mcpMaxCodes]
	}
	// The first code is given whole; the others as they fit with it.
	found = append(found[:1], fitCodes(found[1:], mcpMaxResult-2048-2*len(found[0]))...)
	return waitForCodeOut{Arrived: true, Code: found[0], Codes: found, EmailID: e.ID, Subject: capFieldPtr(e.Subject), waited: w}, nil
}

type waitForLinkIn struct {
	Inbox    string   `json:"inbox" jsonschema:"the inbox: the local part of the address (before the @), or the whole address"`
	Subject  string   `json:"subject,omitempty" jsonschema:"only an email whose subject contains this (any case)"`
	From     string   `json:"from,omitempty" jsonschema:"only an email whose sender's address or name contains this (any case), like noreply@example.com"`
	Since    *float64 `json:"since,omitempty" jsonschema:"only an email received after this Unix time, in seconds"`
	Contains string   `json:"contains,omitempty" jsonschema:"the first link whose URL contains this (any case), like /verify; without it, the first link that is not an unsubscribe link"`
	TimeoutS *int     `json:"timeout_s,omitempty" jsonschema:"how long to wait, 1 to 50 seconds (default 25)"`
}

type waitForLinkOut struct {
	Arrived  bool     `json:"arrived" jsonschema:"false when no email with such a link arrived in time"`
	Link     string   `json:"link,omitempty" jsonschema:"the link's URL, exactly as written"`
	LinkText string   `json:"link_text,omitempty" jsonschema:"the text a reader clicks, as the sender wrote it, when the link has one"`
	EmailID  string   `json:"email_id,omitempty" jsonschema:"the email it came in, for read_email"`
	Subject  *string  `json:"subject,omitempty" jsonschema:"that email's subject, as the sender wrote it"`
	Since    *float64 `json:"since,omitempty" jsonschema:"when none arrived: the since to wait again with, so that no email is missed"`
	waited   waited
}

func (o waitForLinkOut) text(f fence) string {
	if !o.Arrived {
		return o.waited.none("No email with such a link", "wait_for_link")
	}
	var b strings.Builder
	b.WriteString("A link arrived in " + o.waited.inbox + ". " + f.notice() + "\n")
	b.WriteString("link: " + f.inline(o.Link) + "\n")
	if o.LinkText != "" {
		b.WriteString("link text: " + f.inline(o.LinkText) + "\n")
	}
	writeFoundIn(&b, f, o.EmailID, o.Subject)
	return b.String()
}

// toolWaitForLink waits for an email with a link as asked, and gives the
// link: the emails that match the filters but have none are passed over.
func (s *Server) toolWaitForLink(ctx context.Context, in waitForLinkIn) (waitForLinkOut, error) {
	inbox, err := s.inboxArg(in.Inbox)
	if err != nil {
		return waitForLinkOut{}, err
	}
	q, err := toolQuery(inbox, in.Subject, "", in.From, in.Since, nil)
	if err != nil {
		return waitForLinkOut{}, err
	}
	w, err := newWaited(inbox, in.Since, in.TimeoutS)
	if err != nil {
		return waitForLinkOut{}, err
	}
	var link, text string
	e, ok, err := s.waitFor(ctx, w, q, func(ctx context.Context, e storage.Email) (bool, error) {
		var err error
		link, text, err = s.pickLink(ctx, e.ID, in.Contains)
		return link != "", err
	})
	if err != nil || !ok {
		return waitForLinkOut{Since: &w.since, waited: w}, err
	}
	return waitForLinkOut{Arrived: true, Link: link, LinkText: text, EmailID: e.ID, Subject: capFieldPtr(e.Subject), waited: w}, nil
}

// pickLink returns the link of email id that wait_for_link gives, and its
// text; "" when it has none (spec §11). With contains, it is the first
// link whose URL contains it, in any case. Without, it is the first link
// that is not an unsubscribe link: one of the List-Unsubscribe header's,
// or one whose URL or text says "unsubscribe"; those come after the rest.
// The links are the stored ones (the API's /links), their texts read from
// the stored body, and the header from the message, read only when a
// link may be one of its.
func (s *Server) pickLink(ctx context.Context, id, contains string) (link, text string, err error) {
	c, err := s.db.Content(ctx, id)
	if err != nil {
		return "", "", err
	}
	links := make([]string, 0, len(c.Links))
	for _, l := range c.Links {
		if len(l) <= mcpMaxLink {
			links = append(links, l)
		}
	}
	if len(links) == 0 {
		return "", "", nil
	}
	e, err := s.db.Email(ctx, id)
	if err != nil {
		return "", "", err
	}
	var texts []message.Link
	if e.Body != nil {
		texts = message.Links(*e.Body)
	}
	textOf := func(l string) string {
		for _, t := range texts {
			if t.URL == l && t.Text != "" {
				return capField(t.Text)
			}
		}
		return ""
	}
	if contains != "" {
		want := strings.ToLower(contains)
		for _, l := range links {
			if strings.Contains(strings.ToLower(l), want) {
				return l, textOf(l), nil
			}
		}
		return "", "", nil
	}
	saysUnsubscribe := func(l string) bool {
		if containsFold(l, "unsubscribe") {
			return true
		}
		for _, t := range texts {
			if t.URL == l && containsFold(t.Text, "unsubscribe") {
				return true
			}
		}
		return false
	}
	var (
		listed   []string // the List-Unsubscribe URLs, once read
		read     bool
		fallback string // the first unsubscribe link, given when there is no other
	)
	for _, l := range links {
		if saysUnsubscribe(l) {
			if fallback == "" {
				fallback = l
			}
			continue
		}
		if !read {
			raw, err := s.db.Raw(ctx, id)
			if err != nil {
				return "", "", err
			}
			listed, read = message.ListUnsubscribe(raw), true
		}
		if slices.Contains(listed, l) {
			if fallback == "" {
				fallback = l
			}
			continue
		}
		return l, textOf(l), nil
	}
	return fallback, textOf(fallback), nil
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), sub)
}
