"""A pytest plugin: the fixtures ``burner`` (a client) and ``inbox`` (a
fresh address, cleared after the test).

Installed with the package, pytest finds it by its ``pytest11`` entry
point; otherwise load it with ``-p burner_client.pytest_plugin``. The
server comes from the environment:

- ``BURNER_URL``, ``BURNER_KEY``: the server and an API key (required);
- ``BURNER_DOMAIN``: the domain of the inbox addresses (``burner.test``);
- ``BURNER_PREFIX``: the start of each inbox's local part (``pytest-``).

    def test_signup(inbox):
        sign_up(inbox.address)
        mail = inbox.wait_for_email(subject="Confirm")
        assert inbox.codes(mail.id)
"""

from __future__ import annotations

import os
from typing import Iterator

import pytest

from . import Burner, Inbox, new_address


@pytest.fixture(scope="session")
def burner() -> Burner:
    """A client of the burner that BURNER_URL and BURNER_KEY name."""
    url = os.environ.get("BURNER_URL", "")
    key = os.environ.get("BURNER_KEY", "")
    if not url or not key:
        pytest.fail("the burner fixtures need BURNER_URL and BURNER_KEY in the environment", pytrace=False)
    return Burner(url, key)


@pytest.fixture
def inbox(burner: Burner) -> Iterator[Inbox]:
    """A fresh address at BURNER_DOMAIN; its mail is deleted after the test."""
    domain = os.environ.get("BURNER_DOMAIN") or "burner.test"
    prefix = os.environ.get("BURNER_PREFIX", "pytest-")
    box = Inbox(burner, new_address(domain, prefix))
    yield box
    box.clear()
