"""A real burner for the tests: built from this checkout (``go build``;
BURNER_BIN names a binary to use instead), started on 127.0.0.1 with ports
the kernel picks, the inbox domains inbox.test and other.test, and a data
file in a temporary directory. It sets BURNER_URL and BURNER_KEY, as a user
would, for the plugin's fixtures (load the plugin with ``-p
burner_client.pytest_plugin`` when the package is not installed), and no
BURNER_DOMAIN: the fixtures take the server's address domain."""

from __future__ import annotations

import os
import re
import signal
import smtplib
import socket
import subprocess
import time
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Dict, Iterator, Optional

import pytest

REPO = Path(__file__).resolve().parents[3]

# pytester runs the plugin's fixtures in a pytest of their own, with
# another key (test_plugin.py).
pytest_plugins = ["pytester"]


#: The keys made for the tests, by name: "test" reaches every inbox.
KEYS = {
    "test": [],
    "scoped-ro": ["--inbox", "team-*", "--read-only"],
    "exact": ["--inbox", "alice"],
}


@dataclass
class Server:
    url: str
    key: str
    smtp_host: str
    smtp_port: int
    #: The secrets of KEYS, by name.
    keys: Dict[str, str]

    def send(
        self,
        to: str,
        subject: str,
        text: str,
        *,
        headers: Optional[Dict[str, str]] = None,
        attachment: Optional[bytes] = None,
        filename: str = "data.bin",
        sender: str = "Sender <sender@example.test>",
    ) -> None:
        """Sends one message to ``to`` over SMTP, from ``sender``."""
        msg = EmailMessage()
        msg["From"] = sender
        msg["To"] = to
        msg["Subject"] = subject
        for k, v in (headers or {}).items():
            msg[k] = v
        msg.set_content(text)
        if attachment is not None:
            msg.add_attachment(attachment, maintype="application", subtype="octet-stream", filename=filename)
        with smtplib.SMTP(self.smtp_host, self.smtp_port, timeout=30) as s:
            s.send_message(msg)


def _closed_port() -> str:
    """A loopback UDP address nothing listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture(scope="session", autouse=True)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    d = tmp_path_factory.mktemp("burner")
    binary = os.environ.get("BURNER_BIN", "")
    if not binary:
        # In pytest's cache directory, so that the next run finds the
        # binary up to date and go build takes seconds.
        cache = request.config.cache  # None under -p no:cacheprovider
        binary = str((cache.mkdir("burner-test") if cache else d) / "burner")
        subprocess.run(["go", "build", "-o", binary, "."], cwd=REPO, check=True, timeout=600)
    data = str(d / "burner.db")
    keys = {}
    for name, scope in KEYS.items():
        # keys create prints the key alone on the last line of stdout (spec §1).
        out = subprocess.run(
            [binary, "keys", "create", "--name", name, *scope, "--data", data],
            cwd=d, check=True, capture_output=True, text=True, timeout=60,
        ).stdout
        keys[name] = out.strip().splitlines()[-1]

    log_path = d / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [binary, "serve", "--data", data, "--http", "127.0.0.1:0", "--smtp", "127.0.0.1:0",
             "--domain", "inbox.test", "--domain", "other.test"],
            cwd=d,  # no ./burner.toml there: built-in defaults
            # Fault rules on (spec §13.2), as a test environment has them.
            # The verifications of spec §12 ask a loopback port where
            # nothing listens: no lookup leaves the machine, and each is
            # temperror at once.
            env={**os.environ, "BURNER_FAULTS_ENABLED": "true", "BURNER_DNS_RESOLVER": _closed_port()},
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
        )
    try:
        # burner logs its bound addresses once it serves.
        deadline = time.monotonic() + 60
        while True:
            m = re.search(r'msg="burner started".* smtp=(\S+) .*http=(\S+)', log_path.read_text())
            if m:
                break
            if proc.poll() is not None:
                pytest.fail(f"burner exited ({proc.returncode}) before serving:\n{log_path.read_text()}")
            if time.monotonic() > deadline:
                pytest.fail(f"burner did not start within 60 s:\n{log_path.read_text()}")
            time.sleep(0.05)
        smtp_host, _, smtp_port = m.group(1).rpartition(":")
        srv = Server(url=f"http://{m.group(2)}", key=keys["test"], smtp_host=smtp_host, smtp_port=int(smtp_port), keys=keys)
        saved = {k: os.environ.get(k) for k in ("BURNER_URL", "BURNER_KEY", "BURNER_DOMAIN", "BURNER_PREFIX")}
        os.environ.update(BURNER_URL=srv.url, BURNER_KEY=srv.key)
        os.environ.pop("BURNER_DOMAIN", None)
        os.environ.pop("BURNER_PREFIX", None)
        try:
            yield srv
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)
