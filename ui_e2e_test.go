package main

import (
	"context"
	netsmtp "net/smtp"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"burner/storage"
)

// TestUIInBrowser drives the web UI (spec §5) in a real headless Chromium:
// log in, open an inbox, receive an email over SMTP and see it appear
// without a reload, open it, check that its scripts did not run, delete it.
// With BURNER_SCREENSHOTS=1 it writes the screenshots of the README to
// docs/; otherwise to a temporary directory.
func TestUIInBrowser(t *testing.T) {
	browser := findChromium(t)
	ta := startApp(t, "")
	base := "http://" + ta.httpLn.Addr().String()
	smtpAddr := ta.smtpLn.Addr().String()
	shots := t.TempDir()
	if os.Getenv("BURNER_SCREENSHOTS") == "1" {
		shots = "docs"
	}

	// Some mail first, so the inbox looks lived in; one of them is read.
	for _, m := range []struct{ from, subject, body string }{
		{"Acme Cloud <hello@acme.example>", "Welcome to Acme Cloud", "Thanks for signing up."},
		{"Shop Müller <shop@mueller.example>", "Your order #1042 has shipped", "It is on its way."},
		{"GitHub <noreply@github.example>", "[GitHub] Please verify your device", "Verification code: 123456"},
	} {
		msg := "From: " + m.from + "\r\nTo: alice@inbox.test\r\nSubject: " + m.subject + "\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + m.body + "\r\n"
		if err := sendMail(t, smtpAddr, "bounce@sender.example", []string{"alice@inbox.test"}, msg); err != nil {
			t.Fatalf("SendMail %q: %v", m.subject, err)
		}
	}
	old, err := ta.db.List(context.Background(), storage.Query{LocalPart: "alice"})
	if err != nil || len(old) != 3 {
		t.Fatalf("List(alice) = %d emails, %v; want 3", len(old), err)
	}
	if err := ta.db.MarkRead(context.Background(), old[2].ID); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(browser),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox cannot start
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 760),
	)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	defer cancelTab()
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// An inbox asks for the key first, then comes back to the inbox.
	do("open the inbox", chromedp.Navigate(base+"/inbox/alice"), chromedp.WaitVisible(chromedp.ID("key")))
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.HasPrefix(loc, base+"/login?next=") {
		t.Errorf("an inbox without a session went to %s, want the login page", loc)
	}
	do("log in",
		chromedp.SendKeys(chromedp.ID("key"), ta.key),
		chromedp.Submit(chromedp.ID("key")),
		chromedp.WaitVisible(chromedp.CSS("#emails .emails")),
	)
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); loc != base+"/inbox/alice" {
		t.Errorf("after login the browser is at %s, want the inbox", loc)
	}

	// A new email appears without a reload: the marker set in this page
	// survives until it shows.
	do("wait for the live stream",
		chromedp.Evaluate[chromedp.Void](`window.burnerMarker = "same page"`),
		chromedp.WaitReady(chromedp.CSS(`html[data-live="open"]`)),
	)
	evil := "From: Example Shop <signup@shop.example>\r\nTo: alice@inbox.test\r\nSubject: Confirm your account\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" +
		`<h1 style="color:#c2410c">Almost there, Alice</h1>` +
		`<p>Confirm your account within 24 hours: <a href="https://shop.example/confirm?t=42">confirm my account</a>.</p>` +
		`<p style="color:#5f6b7a">Example Shop, 1 Main Street</p>` +
		`<script>document.title='pwned';parent.document.title='pwned'</script>` +
		`<img src=x onerror="parent.document.title='pwned'">` + "\r\n" +
		"--b\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=terms.txt\r\n\r\nThe terms.\r\n--b--\r\n"
	if err := sendMail(t, smtpAddr, "signup@shop.example", []string{"alice@inbox.test"}, evil); err != nil {
		t.Fatalf("SendMail: %v", err)
	}
	do("see the new email", chromedp.WaitVisible(`//a[contains(., "Confirm your account")]`))
	if marker, err := chromedp.Run(ctx, chromedp.Evaluate[string](`window.burnerMarker || ""`)); err != nil || marker != "same page" {
		t.Errorf("the page was reloaded to show the new email (marker %q, %v)", marker, err)
	}
	if got, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#emails li.unread").length`)); got != 3 {
		t.Errorf("%d emails marked unread, want 3", got)
	}
	screenshot(t, ctx, filepath.Join(shots, "ui-inbox.png"))

	// On a phone's width nothing overflows sideways.
	do("show the inbox on a phone",
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)),
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS("#emails .emails")),
	)
	if wide, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > innerWidth`)); wide {
		t.Error("the inbox scrolls sideways at a phone's width")
	}
	screenshot(t, ctx, filepath.Join(shots, "ui-inbox-phone.png"))
	do("back to a laptop", chromedp.EmulateViewport(1200, 760))

	// Open it: it is marked read, and nothing in it ran.
	fresh, err := ta.db.List(context.Background(), storage.Query{LocalPart: "alice", Limit: 1})
	if err != nil || len(fresh) != 1 {
		t.Fatalf("List(alice, 1) = %v, %v", fresh, err)
	}
	do("open the email",
		chromedp.Click(`//a[contains(., "Confirm your account")]`),
		chromedp.WaitVisible(chromedp.CSS("iframe.body")),
		chromedp.Sleep(300*time.Millisecond), // let the frame load, and run anything that would run
	)
	if title, _ := chromedp.Run(ctx, chromedp.Title()); title != "Confirm your account · burner" {
		t.Errorf("the email page's title is %q: the email's script ran", title)
	}
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); loc != base+"/email/"+fresh[0].ID {
		t.Errorf("the email page is at %s, want /email/%s", loc, fresh[0].ID)
	}
	sandbox, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("iframe.body"), "sandbox"))
	if err != nil || !sandbox.Exists || strings.Contains(sandbox.Value, "allow-scripts") || strings.Contains(sandbox.Value, "allow-same-origin") {
		t.Errorf("iframe sandbox = %+v, %v; want a sandbox without allow-scripts or allow-same-origin", sandbox, err)
	}
	if href, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(".attachments a"), "href")); err != nil || href.Value != "/email/"+fresh[0].ID+"/attachments/0" {
		t.Errorf("attachment link = %+v, %v; want terms.txt listed", href, err)
	}
	if e, err := ta.db.Email(context.Background(), fresh[0].ID); err != nil || !e.Read {
		t.Errorf("after the email page opened: read = %v, %v; want true", e.Read, err)
	}
	screenshot(t, ctx, filepath.Join(shots, "ui-email.png"))

	// The sanitizer removed the script at delivery. To check the sandbox and
	// the CSP on their own, store a body the sanitizer never saw. A script
	// in the sandbox cannot reach the page, but it could post a message,
	// which the page (through DevTools) turns into its title.
	body := `<p>raw</p><script>parent.postMessage('pwned','*');parent.document.title='pwned'</script>` +
		`<img src="x" onerror="parent.postMessage('pwned','*');parent.document.title='pwned'">`
	raw, err := ta.db.Deliver(context.Background(), &storage.Message{From: "x@evil.example", Subject: ptrTo("Unsanitized"), Body: &body}, []string{"alice@inbox.test"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `addEventListener("message", function (e) { if (e.data === "pwned") { document.title = "pwned"; } });`,
	})
	if err != nil {
		t.Fatal(err)
	}
	do("open an unsanitized email",
		chromedp.Navigate(base+"/email/"+raw[0].ID),
		chromedp.WaitVisible(chromedp.CSS("iframe.body")),
		chromedp.Sleep(300*time.Millisecond),
	)
	if title, _ := chromedp.Run(ctx, chromedp.Title()); title != "Unsanitized · burner" {
		t.Errorf("the page's title is %q: a script in an unsanitized body ran", title)
	}

	// Delete: back to the inbox, without it.
	do("delete the email",
		chromedp.Navigate(base+"/email/"+fresh[0].ID),
		chromedp.Click(chromedp.CSS(`.actions button.danger`)),
		chromedp.WaitVisible(chromedp.CSS("#emails")),
	)
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); loc != base+"/inbox/alice" {
		t.Errorf("after the deletion the browser is at %s, want the inbox", loc)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`[...document.querySelectorAll("#emails a")].filter(a => a.textContent.includes("Confirm your account")).length`)); n != 0 {
		t.Error("the inbox still lists the deleted email")
	}
	if _, err := ta.db.Email(context.Background(), fresh[0].ID); err == nil {
		t.Error("the email is still stored after the UI deleted it")
	}

	// Why a mail did not arrive: the inbox's SMTP sessions, a refused
	// RCPT among them, the transcript one click away.
	c, err := netsmtp.Dial(smtpAddr)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Mail("app@sender.example"); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt("alice@inbox.test"); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt("nobody@elsewhere.example"); codeOf(err) != 550 {
		t.Fatalf("RCPT for nobody@elsewhere.example: %v, want 550", err)
	}
	c.Quit()
	do("open the inbox's sessions",
		chromedp.Navigate(base+"/inbox/alice"),
		chromedp.Click(`//a[contains(., "SMTP sessions")]`),
		chromedp.WaitVisible(chromedp.CSS(".sessions")),
	)
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); loc != base+"/inbox/alice/sessions" {
		t.Errorf("the sessions link went to %s", loc)
	}
	if shown, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector(".session .transcript").checkVisibility()`)); shown {
		t.Error("the transcript shows before it is asked for")
	}
	do("open the newest transcript", chromedp.Click(chromedp.CSS(".session summary")), chromedp.WaitVisible(chromedp.CSS(".session .transcript")))
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".session .transcript")))
	if err != nil || !strings.Contains(text, "C: RCPT TO:<nobody@elsewhere.example>\nS: 550 5.1.1 Relay access denied: not an inbox domain here") {
		t.Errorf("the newest transcript reads %q, %v; want the refused RCPT and its reply", text, err)
	}

	// A test's inbox is one click away from the home page: the recent
	// inboxes, the newest mail first.
	pytest := "pytest-3f9a2c7e41d0"
	msg := "From: App <app@example.test>\r\nTo: " + pytest + "@inbox.test\r\nSubject: Your sign-in code\r\n\r\nCode: 804 113\r\n"
	if err := sendMail(t, smtpAddr, "app@example.test", []string{pytest + "@inbox.test"}, msg); err != nil {
		t.Fatalf("SendMail: %v", err)
	}
	link := `.inboxes a[href="/inbox/` + pytest + `"]`
	do("see the recent inboxes", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(link)))
	if first, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(".inboxes a").getAttribute("href")`)); first != "/inbox/"+pytest {
		t.Errorf("the first recent inbox links %q, want the one with the newest mail, /inbox/%s", first, pytest)
	}
	screenshot(t, ctx, filepath.Join(shots, "ui-home.png"))
	do("filter the recent inboxes by prefix",
		chromedp.SendKeys(chromedp.ID("prefix"), "PYTEST-"),
		chromedp.Submit(chromedp.ID("prefix")),
		chromedp.WaitVisible(chromedp.CSS(`.recent .filter a[href="/"]`)), // "Show all": the filtered page
	)
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(".inboxes a").length`)); n != 1 {
		t.Errorf("the recent inboxes starting with PYTEST- are %d, want 1", n)
	}
	do("open the test's inbox", chromedp.Click(chromedp.CSS(link)), chromedp.WaitVisible(`//a[contains(., "Your sign-in code")]`))
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); loc != base+"/inbox/"+pytest {
		t.Errorf("the recent inbox's link went to %s, want /inbox/%s", loc, pytest)
	}
	do("show the home page on a phone",
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)),
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(link)),
	)
	if wide, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > innerWidth`)); wide {
		t.Error("the home page scrolls sideways at a phone's width")
	}
}

func ptrTo(s string) *string { return &s }

// findChromium returns the path of Chromium, or skips the test: CI installs
// it (.ci/run), a developer's machine may not have it.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium on PATH (apt-get install chromium): skipping the browser test")
	return ""
}

// screenshot saves the page as a PNG at path.
func screenshot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", path)
}
