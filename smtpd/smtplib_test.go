package smtpd

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"burner/storage"
)

// smtplibScript is what a Python test suite does against burner armed
// with fault rules: a recipient refused 451 once, then taken; a message
// refused at its end; and each reply as smtplib reports it.
const smtplibScript = `
import json, smtplib, sys

host, port = sys.argv[1], int(sys.argv[2])
msg = b"From: app@sender.test\r\nSubject: from smtplib\r\n\r\nhello\r\n"
out = {}
with smtplib.SMTP(host, port, timeout=10) as s:
    try:
        s.sendmail("app@sender.test", ["retry@inbox.test"], msg)
        out["first"] = "taken"
    except smtplib.SMTPRecipientsRefused as e:
        code, text = e.recipients["retry@inbox.test"]
        out["first"] = "%d %s" % (code, text.decode())
    s.ehlo_or_helo_if_needed()
    for key, reply in (("mail", s.mail("app@sender.test")), ("rcpt", s.rcpt("retry@inbox.test")), ("data", s.data(msg))):
        out[key] = "%d %s" % (reply[0], reply[1].decode())
    try:
        s.sendmail("app@sender.test", ["refuse@inbox.test"], msg)
        out["refused"] = "taken"
    except smtplib.SMTPDataError as e:
        out["refused"] = "%d %s" % (e.smtp_code, e.smtp_error.decode())
    code, text = s.quit()
    out["quit"] = "%d %s" % (code, text.decode())
print(json.dumps(out))
`

// Python's smtplib against the real daemon with fault rules: what it
// reports, and what the session log says of it.
func TestSmtplibWithFaults(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 is not installed: %v", err)
		}
		t.Skipf("python3 is not installed (%v): skipping the smtplib test", err)
	}
	forEachEngine(t, func(t *testing.T, open opener) {
		db := open(t, nil)
		addr, log, _ := faultDaemon(t, db, Options{Hostname: "mx.burner.test"})
		retry := arm(t, db, storage.FaultRule{Inbox: "retry", Stage: storage.FaultAtRcpt, Reply: "451 4.3.0 Try again later", Times: 1})
		refuse := arm(t, db, storage.FaultRule{Inbox: "refuse", Stage: storage.FaultAtData, Reply: "550 5.7.1 Message refused"})
		host, port, _ := net.SplitHostPort(addr)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, python, "-c", smtplibScript, host, port).CombinedOutput()
		if err != nil {
			t.Fatalf("python3 smtplib: %v\n%s", err, out)
		}
		var got map[string]string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("smtplib printed %q: %v", out, err)
		}
		for key, want := range map[string]string{
			"first":   "^451 4.3.0 Try again later$",
			"mail":    "^250 2.1.0 OK$",
			"rcpt":    "^250 2.1.5 OK$",
			"data":    "^250 2.0.0 OK " + uuid7 + "$",
			"refused": "^550 5.7.1 Message refused$",
			"quit":    "^221 2.0.0 mx.burner.test closing connection$",
		} {
			if !regexp.MustCompile(want).MatchString(got[key]) {
				t.Errorf("smtplib's %s: %q, want %s", key, got[key], want)
			}
		}
		if n := len(list(t, db, "retry")) + len(list(t, db, "refuse")); n != 1 {
			t.Errorf("%d emails stored, want 1", n)
		}
		recs := log.waitEnded(t, 3)
		outcomes := []storage.SMTPOutcome{recs[0].Outcome, recs[1].Outcome, recs[2].Outcome}
		if outcomes[0] != storage.SMTPFaulted || outcomes[1] != storage.SMTPDelivered || outcomes[2] != storage.SMTPFaulted {
			t.Errorf("outcomes %q, want faulted, delivered, faulted", outcomes)
		}
		if recs[0].Recipients[0].Fault != retry.ID || recs[2].Data.Fault != refuse.ID || "250 2.0.0 OK "+recs[1].ID != got["data"] {
			t.Errorf("records %+v / %+v / %+v: want the rules' ids and the 250's session id", recs[0], recs[1], recs[2])
		}
	})
}
