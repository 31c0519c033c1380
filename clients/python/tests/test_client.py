"""The client against a real burner: mail goes in over SMTP and is read
back through every call of the client."""

from __future__ import annotations

import re
import smtplib
import socket
import threading
import time
from datetime import timedelta
from typing import List

import pytest

from burner_client import (
    Attachment,
    Auth,
    AuthClient,
    Burner,
    BurnerError,
    Email,
    FaultRule,
    Features,
    Info,
    KeyInfo,
    Limits,
    local_part,
    new_address,
    scoped_address,
    SPFResult,
)


@pytest.fixture(scope="module")
def client(server) -> Burner:
    return Burner(server.url, server.key)


def test_waits_for_a_mail_sent_over_smtp_and_reads_its_code(client, server):
    address = client.new_address("inbox.test", "signup-")
    got: List[Email] = []
    # The wait is under way before the mail is sent: the delivery answers it.
    waiter = threading.Thread(target=lambda: got.append(client.wait_for_email(address, "verify", timeout=30)))
    waiter.start()
    server.send(
        address,
        "Please verify your address",
        "Order 4821 has shipped.\nVerification code: 551 082\nOr open https://app.test/verify?t=abc\n",
    )
    waiter.join(40)
    assert not waiter.is_alive() and got, "no mail within the wait"
    mail = got[0]
    assert mail.to_address == address
    assert mail.subject == "Please verify your address"
    assert mail.from_address == "sender@example.test"
    assert mail.from_name == "Sender"
    assert mail.read is False
    assert mail.received_at.tzinfo is not None
    assert client.codes(mail.id) == ["551082", "4821"]
    assert client.codes(mail.id, pattern=r"code: (\d{3} \d{3})") == ["551 082"]
    assert client.links(mail.id) == ["https://app.test/verify?t=abc"]
    assert client.text(mail.id).startswith("Order 4821 has shipped.")
    raw = client.raw(mail.id)
    assert raw.startswith(b"Received: ")
    assert b"\r\nSubject: Please verify your address\r\n" in raw
    assert client.get_email(mail.id) == mail


def test_a_wait_with_nothing_to_find_raises_timeout_error(client):
    to = local_part(new_address("inbox.test"))
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match=f"no email for {re.escape(to)} within 1 s"):
        client.wait_for_email(to, timeout=1)
    took = time.monotonic() - t0
    assert 0.9 <= took < 10, took


def test_a_wait_longer_than_one_request_asks_again(server):
    # max_wait=1 stands for the API's 60 s: a wait of 20 s is many
    # requests, and a mail that comes after the first is still found.
    relay = Relay(*server.url.removeprefix("http://").rsplit(":", 1))
    try:
        client = Burner(f"http://127.0.0.1:{relay.port}", server.key, max_wait=1)
        address = new_address("inbox.test")
        got: List[Email] = []
        waiter = threading.Thread(target=lambda: got.append(client.wait_for_email(address, timeout=20)))
        waiter.start()
        until("a second request", lambda: len(relay.requests) >= 2)
        assert b"wait=1" in relay.requests[0]
        server.send(address, "late", "after the first request")
        waiter.join(25)
        assert got and got[0].subject == "late"
    finally:
        relay.close()
    with pytest.raises(ValueError):
        Burner(server.url, server.key, max_wait=61)


def test_a_wait_returns_a_mail_already_there_and_since_skips_it(client, server):
    address = new_address("inbox.test")
    server.send(address, "already here", "hello")
    t0 = time.monotonic()
    mail = client.wait_for_email(address, timeout=20)
    assert mail.subject == "already here"
    assert time.monotonic() - t0 < 5
    with pytest.raises(TimeoutError):
        client.wait_for_email(address, since=mail.received_at, timeout=1)


@pytest.fixture(scope="module")
def filled(client, server):
    """An inbox of three messages whose local part has a "+", oldest first."""
    to = f"list-{local_part(new_address('x.test'))}+tag"
    for i in range(3):
        server.send(
            f"{to}@inbox.test",
            f"Message {i}",
            "the middle one says ahoy" if i == 1 else "plain",
            headers={"X-Test-Run": f"run-{i}"},
        )
    return to, list(reversed(client.list_emails(to)))


def test_list_is_newest_first(client, filled):
    to, sent = filled
    assert [e.subject for e in client.list_emails(f"{to}@inbox.test")] == ["Message 2", "Message 1", "Message 0"]
    assert [e.received_at for e in sent] == sorted(e.received_at for e in sent)


def test_list_filters(client, filled):
    to, _ = filled

    def subjects(**kw):
        return [e.subject for e in client.list_emails(to, **kw)]

    assert subjects(subject="message 1") == ["Message 1"]
    assert subjects(body="AHOY") == ["Message 1"]
    assert subjects(search="middle ahoy") == ["Message 1"]
    assert subjects(header="X-Test-Run:run-2") == ["Message 2"]
    assert subjects(header=("x-test-run", "RUN-0")) == ["Message 0"]
    assert subjects(limit=2) == ["Message 2", "Message 1"]


def test_from_filter_with_other_filters_and_in_a_wait(client, server):
    address = new_address("inbox.test", "from-")
    got: List[Email] = []
    waiter = threading.Thread(target=lambda: got.append(client.wait_for_email(address, from_="SHOP.test", timeout=30)))
    waiter.start()
    server.send(address, "Your code", "not from the shop")
    server.send(address, "Your code", "1234", sender="The Shop <noreply@shop.test>")
    waiter.join(40)
    assert got and got[0].from_address == "noreply@shop.test"

    def froms(**kw):
        return [e.from_address for e in client.list_emails(address, **kw)]

    assert froms(from_="the shop") == ["noreply@shop.test"]  # the name
    assert froms(from_="sender", subject="code") == ["sender@example.test"]
    assert froms(from_="test") == ["noreply@shop.test", "sender@example.test"]
    assert froms(from_="nobody") == []


def test_since_and_before_page_through_an_inbox(client, filled):
    to, sent = filled
    ids = lambda **kw: [e.id for e in client.list_emails(to, **kw)]  # noqa: E731
    assert ids(since=sent[0].received_at) == [sent[2].id, sent[1].id]
    assert ids(before=sent[2].received_at) == [sent[1].id, sent[0].id]
    assert ids(since=sent[0].received_at.timestamp(), before=sent[2].received_at) == [sent[1].id]
    assert ids(since=sent[2].received_at - timedelta(milliseconds=1)) == [sent[2].id]


@pytest.mark.parametrize(
    "call, status, message",
    [
        (lambda c, to, id: c.list_emails(to, subject="a", body="b"), 400,
         "Only one of subject, search, or body may be specified."),
        (lambda c, to, id: c.list_emails(to, limit=11), 400, "'limit' must be an integer from 1 to 10."),
        (lambda c, to, id: c.list_emails("no spaces"), 400,
         "Invalid local part. Only alphanumeric characters and _-+. are allowed."),
        (lambda c, to, id: c.list_emails(to, header="no colon"), 400,
         "'header' must be Name:value, like X-Test-Run:42."),
        (lambda c, to, id: c.list_emails(to, since=-1), 400, "'since' must be a Unix timestamp in seconds."),
        (lambda c, to, id: c.codes(id, pattern="("), 400, "'pattern' must be a valid regular expression."),
        (lambda c, to, id: c.get_email("00000000-0000-4000-8000-000000000000"), 404, "Email not found"),
        (lambda c, to, id: c.attachment(id, 0), 404, "Attachment not found"),
        (lambda c, to, id: Burner(c.url, "bnr_not-a-key").list_emails(to), 401, "Missing or invalid API key."),
    ],
)
def test_refusals_raise_burner_error_with_the_apis_message(client, filled, call, status, message):
    to, sent = filled
    with pytest.raises(BurnerError) as e:
        call(client, to, sent[0].id)
    assert (e.value.status, e.value.message) == (status, message)


def test_attachments(client, server):
    address = new_address("inbox.test", "files-")
    server.send(address, "Your invoice", "Invoice attached.", attachment=bytes([0, 1, 2, 250, 255]))
    mail = client.wait_for_email(address, timeout=20)
    assert client.attachments(mail.id) == [
        Attachment(index=0, filename="data.bin", content_type="application/octet-stream", size=5, content_id="")
    ]
    assert client.attachment(mail.id, 0) == bytes([0, 1, 2, 250, 255])
    assert client.text(mail.id).strip() == "Invoice attached."


def test_auth_says_what_the_mx_saw(client, server):
    address = new_address("inbox.test", "auth-")
    server.send(address, "authenticated?", "hi")
    mail = client.wait_for_email(address, timeout=20)
    # Without a DNS answer every verdict is temperror, within seconds.
    a = client.auth(mail.id, wait=30)
    assert isinstance(a, Auth)
    assert a.status == "done"
    assert a.client.ip == "127.0.0.1" and a.client.ptr is None and not a.client.fcrdns
    assert a.tls is None
    assert a.mail_from == "sender@example.test"
    assert a.spf == SPFResult(result="temperror", domain="example.test")
    assert a.dkim == []
    assert a.dmarc is not None and a.dmarc.result == "temperror" and a.dmarc.policy is None
    assert re.match(r"localhost; spf=temperror .*smtp\.mailfrom=example\.test; dkim=none; dmarc=temperror ", a.authentication_results or "")
    assert client.auth(mail.id) == a
    assert isinstance(a.client, AuthClient)
    for bad in (0, 61, True, 1.5):
        with pytest.raises(ValueError):
            client.auth(mail.id, wait=bad)
    with pytest.raises(BurnerError) as e:
        client.auth("8b0e2f0e-6d7c-4b1a-9c39-5c2f0c4d8e11")
    assert e.value.status == 404


def test_delete_email_and_clear_inbox(client, server):
    address = new_address("inbox.test", "del-")
    for s in ("one", "two", "three"):
        server.send(address, s, s)
    emails = client.list_emails(address)
    assert len(emails) == 3
    client.delete_email(emails[0].id)
    with pytest.raises(BurnerError) as e:
        client.get_email(emails[0].id)
    assert e.value.status == 404
    assert len(client.list_emails(address)) == 2
    client.clear_inbox(address)
    assert client.list_emails(address) == []
    client.clear_inbox(address)  # an empty inbox clears too


def test_new_address():
    seen = {new_address("inbox.test", "ci-") for _ in range(100)}
    assert len(seen) == 100
    for a in seen:
        assert re.fullmatch(r"ci-[a-z0-9]{12}@inbox\.test", a)
    for bad in (("inbox.test", "no spaces "), ("inbox.test", "x" * 53), ("",)):
        with pytest.raises(ValueError):
            new_address(*bad)
    assert local_part("a.b+c@d.test") == "a.b+c"
    assert local_part("alice") == "alice"


def test_info_says_what_the_server_and_the_key_are(client, server):
    info = client.info()
    assert info.version
    assert info.domains == ["inbox.test", "other.test"]
    assert info.address_domain == "inbox.test"
    assert info.key == KeyInfo(name="test", inboxes=["*"], read_only=False)
    assert info.limits == Limits(max_message_bytes=10485760, max_recipients=100, max_list_limit=10)
    assert info.features.mcp and not info.features.webhooks and info.features.faults
    ro = Burner(server.url, server.keys["scoped-ro"]).info()
    assert ro.key == KeyInfo(name="scoped-ro", inboxes=["team-*"], read_only=True)


def test_scoped_address_stays_inside_the_keys_first_pattern():
    def info(inboxes: List[str], address_domain: str = "inbox.test") -> Info:
        return Info(
            version="", domains=[], address_domain=address_domain,
            key=KeyInfo(name="k", inboxes=inboxes, read_only=False),
            limits=Limits(0, 0, 10), features=Features(),
        )

    assert re.fullmatch(r"pytest-[a-z0-9]{12}@inbox\.test", scoped_address(info(["*"]), prefix="pytest-"))
    assert re.fullmatch(r"team-pytest-[a-z0-9]{12}@inbox\.test", scoped_address(info(["team-*", "alice"]), prefix="pytest-"))
    # A prefix inside the pattern already is kept as it is.
    assert re.fullmatch(r"Team-ci-[a-z0-9]{12}@inbox\.test", scoped_address(info(["team-*"]), prefix="Team-ci-"))
    assert re.fullmatch(r"team-[a-z0-9]{12}@inbox\.test", scoped_address(info(["team-*"])))
    # A pattern that names an inbox is that inbox; "*" anywhere is every inbox.
    assert scoped_address(info(["alice", "team-*"]), "d.test", "pytest-") == "alice@d.test"
    assert re.fullmatch(r"pytest-[a-z0-9]{12}@inbox\.test", scoped_address(info(["alice", "*"]), prefix="pytest-"))
    # The domain: the one given, else address_domain, else burner.test.
    assert re.fullmatch(r"[a-z0-9]{12}@burner\.test", scoped_address(info(["*"], "")))


def test_info_takes_features_it_does_not_know():
    d = {
        "version": "9", "domains": [], "addressDomain": "a.test",
        "key": {"name": "k", "inboxes": ["*"], "readOnly": True},
        "limits": {"maxMessageBytes": 1, "maxRecipients": 2, "maxListLimit": 10},
        "features": {"mcp": True, "teleport": True},
    }
    assert Info.from_json(d).features == Features(mcp=True)


def test_burner_checks_its_arguments():
    assert Burner("http://127.0.0.1:1/api/v1/", "k").url == "http://127.0.0.1:1"
    for url, key in (("", "k"), ("127.0.0.1:8080", "k"), ("ftp://h", "k"), ("http://h", "")):
        with pytest.raises(ValueError):
            Burner(url, key)


class Relay:
    """A TCP relay between the client and burner, to cut connections as a
    network would and to see what the client sends."""

    def __init__(self, host: str, port: "int | str") -> None:
        self.upstream = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.requests: List[bytes] = []
        self.bytes_back = 0
        self.conns: List[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                down, _ = self.listener.accept()
            except OSError:
                return  # closed
            up = socket.create_connection(self.upstream)
            with self.lock:
                self.conns += [down, up]
            threading.Thread(target=self._pipe, args=(down, up, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(up, down, False), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, request: bool) -> None:
        try:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                # Each request's head, also of requests on a kept-alive connection.
                if request and re.match(rb"(GET|HEAD|DELETE) /", b):
                    with self.lock:
                        self.requests.append(b)
                if not request:
                    with self.lock:
                        self.bytes_back += len(b)
                dst.sendall(b)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        with self.lock:
            conns, self.conns = self.conns, []
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()

    def close(self) -> None:
        self.listener.close()
        self.cut()


def until(what, cond, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def test_events_stream_arrivals_and_resume_after_a_dropped_connection(client, server):
    host, port = client.url.removeprefix("http://").rsplit(":", 1)
    relay = Relay(host, int(port))
    relayed = Burner(f"http://127.0.0.1:{relay.port}", server.key)
    address = new_address("inbox.test", "ev-")
    got: List[Email] = []

    def read() -> None:
        for e in relayed.events(address, timeout=40):
            got.append(e)
            if len(got) == 3:
                break  # closes the stream

    reader = threading.Thread(target=read, daemon=True)
    try:
        reader.start()
        # The stream is open once burner's first bytes come back.
        until("the stream to open", lambda: relay.bytes_back > 0)
        server.send(address, "first", "1")
        until("the first event", lambda: len(got) == 1)
        assert got[0].subject == "first"

        # Cut the connection, then deliver while the client is away.
        before = len(relay.requests)
        relay.cut()
        server.send(address, "second", "2")
        until("the second event", lambda: len(got) == 2)
        assert got[1].subject == "second"
        assert len(relay.requests) == before + 1, "one reconnection"
        assert re.search(rb"\r\nlast-event-id: " + got[0].id.encode() + rb"\r\n", relay.requests[-1], re.I)

        server.send(address, "third", "3")
        until("the third event", lambda: len(got) == 3)
        assert got[2].subject == "third"
        reader.join(10)
        assert not reader.is_alive()
    finally:
        relay.close()

    # A stream started after an id replays what came after it.
    replay = client.events(address, last_event_id=got[0].id, timeout=20)
    assert [next(replay).subject, next(replay).subject] == ["second", "third"]
    replay.close()

    # A stream with a time limit ends by itself.
    t0 = time.monotonic()
    assert list(client.events(address, timeout=1)) == []
    assert time.monotonic() - t0 < 10


def test_a_refused_stream_raises_burner_error(client):
    with pytest.raises(BurnerError) as e:
        next(client.events("bad inbox", timeout=10))
    assert e.value.status == 400


def _smtp_code(server, to: str) -> int:
    """Sends one message to ``to`` with smtplib; its reply code (250 when
    taken, the refusal's code else)."""
    try:
        server.send(to, "order", "thanks")
        return 250
    except smtplib.SMTPRecipientsRefused as e:
        return e.recipients[to][0]


def _ended_sessions(client: Burner, to: str, n: int):
    deadline = time.monotonic() + 10
    while True:
        got = client.sessions(to)
        if sum(s.ended_at is not None for s in got) >= n or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def test_a_451_armed_twice_then_accepted_and_the_session_log(client, server):
    to = client.new_address("inbox.test", "retry-")
    rule = client.faults.arm(to, "rcpt", "451 4.3.0 Try again later", times=2)
    assert isinstance(rule, FaultRule) and rule.used == 0 and rule.delay == "0s" and rule.inbox == local_part(to)
    assert [_smtp_code(server, to) for _ in range(3)] == [451, 451, 250]
    assert [r.used for r in client.faults.list() if r.id == rule.id] == [2]
    sessions = _ended_sessions(client, to, 3)
    assert [s.outcome for s in sessions] == ["delivered", "faulted", "faulted"]
    assert sessions[1].recipients[0].fault == rule.id
    assert sessions[1].recipients[0].reply == "451 4.3.0 Try again later"
    assert sessions[0].emails == [client.list_emails(to)[0].id]
    assert sessions[0].data is not None and sessions[0].data.reply == "250 2.0.0 OK " + sessions[0].id
    assert client.sessions(to, limit=1) == sessions[:1]
    client.faults.disarm(rule)
    assert rule.id not in [r.id for r in client.faults.list()]


def test_fault_rules_delay_and_the_apis_refusals(client, server):
    rule = client.faults.arm("slow-*", "data", disconnect=True, delay=1.5, per_minute=3)
    assert rule.delay == "1.5s" and rule.per_minute == 3 and rule.disconnect
    client.faults.disarm(rule.id)
    with pytest.raises(BurnerError) as e:
        client.faults.disarm(rule.id)
    assert (e.value.status, e.value.message) == (404, "Fault not found")
    with pytest.raises(BurnerError) as e:
        client.faults.arm("x", "helo", "451")
    assert (e.value.status, e.value.message) == (400, "'stage' must be \"rcpt\" or \"data\".")
    ro = Burner(server.url, server.keys["scoped-ro"])
    with pytest.raises(BurnerError) as e:
        ro.faults.arm("team-1", "rcpt", "451")
    assert (e.value.status, e.value.message) == (403, "This API key is read-only.")
    with pytest.raises(BurnerError) as e:
        ro.sessions()
    assert e.value.status == 403
