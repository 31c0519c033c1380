"""The pytest plugin's fixtures, configured from BURNER_URL and BURNER_KEY
(set by conftest.py from the burner it started). The tests run in file
order: the last checks what the fixtures left behind."""

from __future__ import annotations

import re
from typing import List

from burner_client import Burner, Inbox

used: List[Inbox] = []


def test_signup_code_arrives_in_a_fresh_inbox(inbox, burner, server):
    used.append(inbox)
    assert isinstance(burner, Burner)
    assert re.fullmatch(r"pytest-[a-z0-9]{12}@inbox\.test", inbox.address)
    assert inbox.list_emails() == []
    # The application under test would send this mail.
    server.send(inbox.address, "Confirm your account", "Welcome!\nYour confirmation code is 734 019.\n")
    mail = inbox.wait_for_email("Confirm", timeout=30)
    assert mail.to_address == inbox.address
    assert inbox.codes(mail.id) == ["734019"]


def test_a_second_test_gets_another_inbox(inbox, server):
    used.append(inbox)
    assert used[1].address != used[0].address
    server.send(inbox.address, "Hello", "no code here")
    assert inbox.wait_for_email(timeout=30).subject == "Hello"


def test_the_inboxes_were_cleared_after_their_tests(burner):
    assert len(used) == 2
    for box in used:
        assert burner.list_emails(box.to) == []
