"""The pytest plugin's fixtures, configured from BURNER_URL and BURNER_KEY
(set by conftest.py from the burner it started), and with scoped keys in a
pytest of their own. The tests run in file order: the third checks what
the fixtures left behind."""

from __future__ import annotations

import os
import re
import smtplib
import time
from pathlib import Path
from typing import List

import pytest

import burner_client
from burner_client import Burner, Inbox

used: List[Inbox] = []


def test_signup_code_arrives_in_a_fresh_inbox(inbox, burner, burner_info, server):
    used.append(inbox)
    assert isinstance(burner, Burner)
    assert burner_info.key.inboxes == ["*"] and not burner_info.key.read_only
    # No BURNER_DOMAIN: the server's address domain, its first domain.
    assert burner_info.address_domain == "inbox.test"
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


# A test suite of a user's, run by pytester with the key it is given: it
# writes down the address its inbox fixture made and reads its mail.
USER_SUITE = '''
import os, smtplib
from email.message import EmailMessage

def test_signup(inbox):
    with open(os.environ["BURNER_TEST_ADDRESS_FILE"], "w") as f:
        f.write(inbox.address)
    host, port = os.environ["BURNER_TEST_SMTP"].rsplit(":", 1)
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "shop@example.test", inbox.address, "Confirm"
    msg.set_content("Your code is 734019.")
    with smtplib.SMTP(host, int(port), timeout=30) as s:
        s.send_message(msg)
    mail = inbox.wait_for_email("Confirm", timeout=30)
    assert inbox.codes(mail.id) == ["734019"]
'''


def run_user_suite(pytester, monkeypatch, request, server, key: str, **env: str) -> str:
    """Runs USER_SUITE in a pytest of its own with BURNER_KEY=key and env,
    wants it to pass, teardown included, and returns the address of its
    inbox."""
    address_file = pytester.path / "address.txt"
    monkeypatch.setenv("BURNER_KEY", key)
    monkeypatch.setenv("BURNER_TEST_SMTP", f"{server.smtp_host}:{server.smtp_port}")
    monkeypatch.setenv("BURNER_TEST_ADDRESS_FILE", str(address_file))
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    # The package as this pytest imports it, from src/ or installed.
    pkg = str(Path(burner_client.__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [pkg, os.environ.get("PYTHONPATH")])))
    pytester.makepyfile(test_user_suite=USER_SUITE)
    # Installed, the package brings the plugin by its entry point;
    # loaded by hand here, it must be loaded by hand there too.
    by_hand = request.config.pluginmanager.get_plugin("burner_client.pytest_plugin") is not None
    result = pytester.runpytest_subprocess(*(["-p", "burner_client.pytest_plugin"] if by_hand else []))
    result.assert_outcomes(passed=1, errors=0)
    return address_file.read_text()


def test_a_scoped_read_only_key(pytester, monkeypatch, request, server, burner):
    """The inbox is inside the key's first pattern, on BURNER_DOMAIN, and
    the teardown deletes nothing: a read-only key's DELETE is a 403,
    which was the teardown's error before the fixture asked the server."""
    address = run_user_suite(pytester, monkeypatch, request, server, server.keys["scoped-ro"], BURNER_DOMAIN="other.test")
    assert re.fullmatch(r"team-pytest-[a-z0-9]{12}@other\.test", address), address
    assert len(burner.list_emails(address)) == 1


def test_a_key_for_one_inbox(pytester, monkeypatch, request, server, burner):
    """A pattern without "*" is the one inbox: every test gets it, on the
    server's address domain, cleared after the test."""
    address = run_user_suite(pytester, monkeypatch, request, server, server.keys["exact"], BURNER_PREFIX="ignored-")
    assert address == "alice@inbox.test"
    assert burner.list_emails(address) == []


armed: List[str] = []


def test_burner_faults_arms_for_the_tests_inbox(inbox, burner_faults, server):
    rule = burner_faults.arm("rcpt", "451 4.3.0 Try again later", times=1)
    armed.append(rule.id)
    assert rule.inbox == inbox.to
    # The application's first try meets the 451; its retry is taken.
    with pytest.raises(smtplib.SMTPRecipientsRefused) as e:
        server.send(inbox.address, "Confirm your account", "code 734019")
    assert e.value.recipients[inbox.address][0] == 451
    server.send(inbox.address, "Confirm your account", "code 734019")
    inbox.wait_for_email("Confirm", timeout=30)
    deadline = time.monotonic() + 10
    while [s.outcome for s in inbox.sessions()] != ["delivered", "faulted"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [s.outcome for s in inbox.sessions()] == ["delivered", "faulted"]


def test_burner_faults_disarmed_after_its_test(burner):
    assert len(armed) == 1
    assert armed[0] not in [r.id for r in burner.faults.list()]
