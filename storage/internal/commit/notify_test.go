package commit

import (
	"testing"

	"burner/storage"
)

func TestNotifierForgetsWokenInboxes(t *testing.T) {
	var n Notifier
	a, b := n.Changed("Alice"), n.Changed("bob")
	if n.Changed("alice") != a {
		t.Error("Changed(Alice) and Changed(alice) differ")
	}
	n.Notify(storage.InboxName("ALICE"))
	select {
	case <-a:
	default:
		t.Error("Notify(alice) left Changed(Alice) open")
	}
	select {
	case <-b:
		t.Error("Notify(alice) closed Changed(bob)")
	default:
	}
	n.mu.Lock()
	held := len(n.waiting)
	n.mu.Unlock()
	if held != 1 {
		t.Errorf("%d inboxes held after waking alice, want 1 (bob)", held)
	}
}

func TestNotifyAll(t *testing.T) {
	var n Notifier
	a, b := n.Changed("alice"), n.Changed("bob")
	n.NotifyAll()
	for name, ch := range map[string]<-chan struct{}{"alice": a, "bob": b} {
		select {
		case <-ch:
		default:
			t.Errorf("NotifyAll left Changed(%s) open", name)
		}
	}
	if c := n.Changed("alice"); c == a {
		t.Error("Changed(alice) after NotifyAll gave the closed channel again")
	}
}
