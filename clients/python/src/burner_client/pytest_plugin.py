"""A pytest plugin: the fixtures ``burner`` (a client), ``burner_info``
(what the server says of itself and of the key), ``inbox`` (a fresh
address inside the key's scope, cleared after the test) and
``burner_faults`` (fault rules for that inbox, disarmed after the test).

Installed with the package, pytest finds it by its ``pytest11`` entry
point; otherwise load it with ``-p burner_client.pytest_plugin``. The
server comes from the environment:

- ``BURNER_URL``, ``BURNER_KEY``: the server and an API key (required);
- ``BURNER_DOMAIN``: the domain of the inbox addresses (the server's
  ``addressDomain`` when not set);
- ``BURNER_PREFIX``: the start of each inbox's local part (``pytest-``),
  after the part of the key's first pattern before its ``*``.

Any key will do: the fixtures ask the server (``GET /api/v1/info``) which
inboxes the key reaches, and do not clean up after a read-only key.

    def test_signup(inbox):
        sign_up(inbox.address)
        mail = inbox.wait_for_email(subject="Confirm")
        assert inbox.codes(mail.id)

    def test_signup_retries(inbox, burner_faults):
        burner_faults.arm("rcpt", "451 4.3.0 Try again later", times=2)
        sign_up(inbox.address)  # the application retries
        assert [s.outcome for s in inbox.sessions()] == ["delivered", "faulted", "faulted"]
"""

from __future__ import annotations

import os
from typing import Any, Iterator, List, Optional

import pytest

from . import Burner, BurnerError, FaultRule, Features, Inbox, Info, KeyInfo, Limits, scoped_address


@pytest.fixture(scope="session")
def burner() -> Burner:
    """A client of the burner that BURNER_URL and BURNER_KEY name."""
    url = os.environ.get("BURNER_URL", "")
    key = os.environ.get("BURNER_KEY", "")
    if not url or not key:
        pytest.fail("the burner fixtures need BURNER_URL and BURNER_KEY in the environment", pytrace=False)
    return Burner(url, key)


@pytest.fixture(scope="session")
def burner_info(burner: Burner) -> Info:
    """What the server says of itself and of the key, asked once."""
    try:
        return burner.info()
    except BurnerError as e:
        if e.status != 404:
            raise
        # A burner older than GET /api/v1/info: its keys were taken to
        # reach every inbox.
        return Info(
            version="",
            domains=[],
            address_domain="",
            key=KeyInfo(name="", inboxes=["*"], read_only=False),
            limits=Limits(max_message_bytes=0, max_recipients=0, max_list_limit=10),
            features=Features(),
        )


@pytest.fixture
def inbox(burner: Burner, burner_info: Info) -> Iterator[Inbox]:
    """A fresh address inside the key's scope, at BURNER_DOMAIN (else the
    server's address domain); its mail is deleted after the test unless
    the key is read-only."""
    address = scoped_address(
        burner_info,
        os.environ.get("BURNER_DOMAIN") or None,
        os.environ.get("BURNER_PREFIX", "pytest-"),
    )
    box = Inbox(burner, address)
    yield box
    # A read-only key may not delete: its mail stays until retention.
    if not burner_info.key.read_only:
        box.clear()


class InboxFaults:
    """Fault rules armed for one test, as the fixture ``burner_faults``
    gives them: each is for the test's inbox unless ``inbox`` names
    another pattern, and is disarmed when the test ends."""

    def __init__(self, burner: Burner, inbox: Inbox) -> None:
        self.burner = burner
        self.inbox = inbox
        self.armed: List[str] = []

    def arm(self, stage: str, reply: str = "", *, inbox: Optional[str] = None, **options: Any) -> FaultRule:
        """See :meth:`Faults.arm`; ``inbox`` is the test's when not given."""
        rule = self.burner.faults.arm(inbox or self.inbox.to, stage, reply, **options)
        self.armed.append(rule.id)
        return rule

    def disarm_all(self) -> None:
        for rule_id in self.armed:
            try:
                self.burner.faults.disarm(rule_id)
            except BurnerError as e:
                if e.status != 404:  # the test disarmed it itself
                    raise
        self.armed.clear()


@pytest.fixture
def burner_faults(burner: Burner, inbox: Inbox) -> Iterator[InboxFaults]:
    """Fault rules for the test's inbox (spec §13.2: the server needs
    ``faults.enabled = true``), disarmed after the test."""
    faults = InboxFaults(burner, inbox)
    yield faults
    faults.disarm_all()
