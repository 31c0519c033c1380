package webhook

import (
	"strings"
	"testing"
)

func TestHookCheck(t *testing.T) {
	good := Hook{URL: "https://hooks.example.com/mail", Inboxes: []string{"ci-*", "Alice"}, Secret: testSecret}
	if errs := good.Check(); len(errs) != 0 {
		t.Errorf("Check(%+v) = %v, want nothing", good, errs)
	}
	bad := Hook{URL: "ftp://x.test/", Inboxes: []string{"a*b"}}
	errs := bad.Check()
	if len(errs) != 3 {
		t.Fatalf("Check(%+v) = %v, want three problems: url, inboxes, secret", bad, errs)
	}
	for i, key := range []string{"url:", "inboxes:", "secret:"} {
		if !strings.HasPrefix(errs[i].Error(), key) {
			t.Errorf("problem %d = %q, want it to start with %q", i, errs[i], key)
		}
	}
	if id := good.ID(); !strings.HasPrefix(id, "hooks.example.com-") || len(id) != len("hooks.example.com-")+8 || strings.Contains(id, "mail") {
		t.Errorf("ID() = %q, want the host and 8 hex digits, without the path", id)
	}
}
