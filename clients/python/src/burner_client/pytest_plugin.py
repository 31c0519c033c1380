"""A pytest plugin: the fixtures ``burner`` (a client), ``burner_info``
(what the server says of itself and of the key) and ``inbox`` (a fresh
address inside the key's scope, cleared after the test).

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
"""

from __future__ import annotations

import os
from typing import Iterator

import pytest

from . import Burner, BurnerError, Features, Inbox, Info, KeyInfo, Limits, scoped_address


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
