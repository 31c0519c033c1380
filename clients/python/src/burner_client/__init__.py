"""The client of burner, the self-hosted disposable inbox, for test suites
and agents: wait for the mail an application sent, read its code.

Standard library only. Every route is described in burner's docs/api.md.

    from burner_client import Burner
    burner = Burner("http://127.0.0.1:8080", key)
    address = burner.new_address("inbox.example")
    sign_up(address)
    mail = burner.wait_for_email(address, subject="Confirm", timeout=30)
    code = burner.codes(mail.id)[0]

And the failure paths: a fault rule makes burner's SMTP answer 451 (the
server needs ``faults.enabled = true``), and the session log tells what
the application did:

    rule = burner.faults.arm(address, "rcpt", "451 4.3.0 Try again later", times=3)
    sign_up(address)
    print([s.outcome for s in burner.sessions(address)])
    burner.faults.disarm(rule)
"""

from __future__ import annotations

import http.client
import json
import math
import re
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

__all__ = [
    "Attachment",
    "Auth",
    "AuthClient",
    "AuthTLS",
    "Burner",
    "BurnerError",
    "DKIMResult",
    "DMARCResult",
    "Email",
    "FaultRule",
    "Faults",
    "Features",
    "Inbox",
    "Info",
    "KeyInfo",
    "Limits",
    "Session",
    "SessionData",
    "SessionRecipient",
    "TranscriptLine",
    "local_part",
    "new_address",
    "scoped_address",
    "SPFResult",
]

__version__ = "0.1.0"

#: A Unix time in seconds, or a datetime (naive ones are taken as UTC).
Time = Union[float, int, datetime]
#: ``"Name:value"``, or the two apart.
HeaderFilter = Union[str, Tuple[str, str]]

# The longest the API holds one request (docs/api.md, "wait").
_MAX_WAIT = 60
# Slack a held request gets beyond its wait before the client gives up on
# the connection: the server answers at the end of the wait; this covers
# the network and a busy machine.
_WAIT_SLACK = 15.0
# An event stream gets a keep-alive every 15 s: a connection silent for
# longer than this is dead, and is opened again.
_EVENTS_READ_TIMEOUT = 40.0

_LOCAL_PART = re.compile(r"[A-Za-z0-9_+.\-]{1,64}\Z")
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


class BurnerError(Exception):
    """An answer of the API other than success: its status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(status, message)
        self.status = status
        self.message = message

    def __str__(self) -> str:
        return f"burner: {self.status} {self.message}"


@dataclass(frozen=True)
class Email:
    """One received email, as one recipient got it."""

    id: str
    to_address: str
    from_address: str
    from_name: str
    subject: Optional[str]
    body: Optional[str]  # sanitized HTML
    received_at: datetime  # UTC, to the millisecond
    read: bool

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Email":
        return cls(
            id=d["id"],
            to_address=d["toAddress"],
            from_address=d["fromAddress"],
            from_name=d["fromName"],
            subject=d["subject"],
            body=d["body"],
            received_at=_parse_time(d["receivedAt"]),
            read=d["read"],
        )


@dataclass(frozen=True)
class Attachment:
    """One file of a message, as ``attachments`` lists it."""

    index: int
    filename: str
    content_type: str
    size: int
    content_id: str

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Attachment":
        return cls(
            index=d["index"],
            filename=d["filename"],
            content_type=d["contentType"],
            size=d["size"],
            content_id=d["contentId"],
        )


@dataclass(frozen=True)
class AuthClient:
    """Who delivered a message: its address, HELO/EHLO name and PTR."""

    ip: str
    helo: str
    #: Its name in reverse DNS; None without a PTR record.
    ptr: Optional[str]
    #: ``ptr`` resolves back to ``ip``.
    fcrdns: bool


@dataclass(frozen=True)
class AuthTLS:
    """The channel after STARTTLS, as Go's crypto/tls names it."""

    version: str
    cipher: str


@dataclass(frozen=True)
class SPFResult:
    """SPF (RFC 7208) of the client's address for ``domain``."""

    result: str
    domain: str


@dataclass(frozen=True)
class DKIMResult:
    """The verdict on one DKIM-Signature field (RFC 6376)."""

    result: str
    domain: str
    selector: str
    #: Why it did not pass; "" when it passed.
    error: str = ""


@dataclass(frozen=True)
class DMARCResult:
    """DMARC (RFC 7489) of the From header's domain."""

    result: str
    domain: str
    #: What the record asks of failing mail; None without a record.
    policy: Optional[str]
    spf_aligned: bool
    dkim_aligned: bool


@dataclass(frozen=True)
class Auth:
    """What burner's MX saw of a message (spec §12), as ``auth`` returns it.

    ``spf``, ``dmarc`` and ``authentication_results`` are None, and
    ``dkim`` empty, until ``status`` is ``"done"``.
    """

    #: "pending", "done", or "off" (the server does not verify).
    status: str
    client: AuthClient
    #: None when the message came without STARTTLS.
    tls: Optional[AuthTLS]
    #: The MAIL FROM reverse-path; "" for the null sender.
    mail_from: str
    spf: Optional[SPFResult]
    #: One per signature, in header order; empty when unsigned.
    dkim: List[DKIMResult]
    dmarc: Optional[DMARCResult]
    #: The RFC 8601 header value of the verdicts.
    authentication_results: Optional[str]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Auth":
        c, t, spf, dmarc = d["client"], d["tls"], d["spf"], d["dmarc"]
        return cls(
            status=d["status"],
            client=AuthClient(ip=c["ip"], helo=c["helo"], ptr=c["ptr"], fcrdns=c["fcrdns"]),
            tls=None if t is None else AuthTLS(version=t["version"], cipher=t["cipher"]),
            mail_from=d["mailFrom"],
            spf=None if spf is None else SPFResult(result=spf["result"], domain=spf["domain"]),
            dkim=[
                DKIMResult(result=k["result"], domain=k["domain"], selector=k["selector"], error=k.get("error", ""))
                for k in d["dkim"]
            ],
            dmarc=None
            if dmarc is None
            else DMARCResult(
                result=dmarc["result"],
                domain=dmarc["domain"],
                policy=dmarc["policy"],
                spf_aligned=dmarc["spfAligned"],
                dkim_aligned=dmarc["dkimAligned"],
            ),
            authentication_results=d["authenticationResults"],
        )


@dataclass(frozen=True)
class KeyInfo:
    """The API key a client uses, as the server sees it."""

    name: str
    #: Its patterns, in order: a local part (that inbox) or a prefix
    #: ending in ``*``; ``["*"]`` for a key that reaches every inbox.
    inboxes: List[str]
    read_only: bool


@dataclass(frozen=True)
class Limits:
    """The server's limits."""

    max_message_bytes: int
    max_recipients: int
    max_list_limit: int


@dataclass(frozen=True)
class Features:
    """Which optional parts of the server are on."""

    auth: bool = False
    faults: bool = False
    mcp: bool = False
    webhooks: bool = False


@dataclass(frozen=True)
class Info:
    """What ``GET /api/v1/info`` says of the server and of the client's key."""

    version: str
    #: The inbox domains; empty when the server takes mail for any domain.
    domains: List[str]
    #: The domain the server makes addresses on (MCP's ``new_address``).
    address_domain: str
    key: KeyInfo
    limits: Limits
    features: Features

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Info":
        k, lim, f = d["key"], d["limits"], d["features"]
        return cls(
            version=d["version"],
            domains=list(d["domains"]),
            address_domain=d["addressDomain"],
            key=KeyInfo(name=k["name"], inboxes=list(k["inboxes"]), read_only=k["readOnly"]),
            limits=Limits(
                max_message_bytes=lim["maxMessageBytes"],
                max_recipients=lim["maxRecipients"],
                max_list_limit=lim["maxListLimit"],
            ),
            # Later servers may name more features than this client knows.
            features=Features(**{name: bool(f.get(name, False)) for name in ("auth", "faults", "mcp", "webhooks")}),
        )


@dataclass(frozen=True)
class SessionRecipient:
    """One RCPT of an SMTP session and burner's reply."""

    address: str
    #: The inbox it names; None outside the inbox domains.
    inbox: Optional[str]
    #: The reply as sent; None when a fault rule closed the connection instead.
    reply: Optional[str]
    #: The id of the fault rule that answered; "" when burner did.
    fault: str = ""


@dataclass(frozen=True)
class SessionData:
    """What became of a session's message data."""

    #: The reply to the data; None when the connection closed without one.
    reply: Optional[str]
    bytes: int
    #: The id of the fault rule that answered; "" when burner did.
    fault: str = ""


@dataclass(frozen=True)
class TranscriptLine:
    """One exchange: a command (``c``) and burner's reply (``s``)."""

    c: str
    s: str


@dataclass(frozen=True)
class Session:
    """One SMTP session of burner's session log (docs/api.md)."""

    id: str
    started_at: datetime
    #: None while the session is open.
    ended_at: Optional[datetime]
    node: str
    client_ip: str
    helo: str
    #: Whether the session was under TLS, and which.
    tls: Optional[Dict[str, str]]
    mail_from: str
    recipients: List[SessionRecipient]
    #: None when DATA was never reached.
    data: Optional[SessionData]
    #: The ids of the emails the session stored.
    emails: List[str]
    #: "delivered", "faulted", "rejected" or "aborted"; None while open.
    outcome: Optional[str]
    transcript: List[TranscriptLine]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Session":
        data = d["data"]
        return cls(
            id=d["id"],
            started_at=_parse_time(d["startedAt"]),
            ended_at=None if d["endedAt"] is None else _parse_time(d["endedAt"]),
            node=d["node"],
            client_ip=d["client"]["ip"],
            helo=d["client"]["helo"],
            tls=d["tls"],
            mail_from=d["mailFrom"],
            recipients=[
                SessionRecipient(address=r["address"], inbox=r["inbox"], reply=r["reply"], fault=r.get("fault", ""))
                for r in d["recipients"]
            ],
            data=None if data is None else SessionData(reply=data["reply"], bytes=data["bytes"], fault=data.get("fault", "")),
            emails=list(d["emails"]),
            outcome=d["outcome"],
            transcript=[TranscriptLine(c=t["c"], s=t["s"]) for t in d["transcript"]],
        )


@dataclass(frozen=True)
class FaultRule:
    """An armed fault rule (docs/api.md, "Fault rules")."""

    id: str
    inbox: str
    stage: str
    reply: str
    times: int
    used: int
    #: A Go duration, as the API writes it: "0s", "1.5s".
    delay: str
    disconnect: bool
    per_minute: int
    created_at: datetime

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "FaultRule":
        return cls(
            id=d["id"],
            inbox=d["inbox"],
            stage=d["stage"],
            reply=d["reply"],
            times=d["times"],
            used=d["used"],
            delay=d["delay"],
            disconnect=d["disconnect"],
            per_minute=d["perMinute"],
            created_at=_parse_time(d["createdAt"]),
        )


def _parse_time(s: str) -> datetime:
    # receivedAt is YYYY-MM-DDTHH:mm:ss.sssZ; fromisoformat takes no "Z"
    # before Python 3.11.
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)


def _seconds(t: Time) -> str:
    """Unix seconds as the API reads them, exact to the millisecond."""
    if isinstance(t, datetime):
        if t.tzinfo is None:
            t = t.replace(tzinfo=timezone.utc)
        ms = round(t.timestamp() * 1000)
        return f"{ms // 1000}.{ms % 1000:03d}"
    return repr(t) if isinstance(t, float) else str(t)


def local_part(inbox: str) -> str:
    """The local part of an inbox given as a local part or an address."""
    local, at, _ = inbox.rpartition("@")
    return local if at else inbox


def new_address(domain: str, prefix: str = "") -> str:
    """A fresh address at ``domain``: ``prefix`` and 12 random lower-case
    letters and digits (62 bits), a local part the API accepts."""
    if not domain or any(c.isspace() or c == "@" for c in domain):
        raise ValueError(f"burner: not a domain: {domain!r}")
    local = prefix + "".join(secrets.choice(_ALPHABET) for _ in range(12))
    if not _LOCAL_PART.match(local):
        raise ValueError(
            f"burner: the prefix {prefix!r} makes no valid local part "
            "(at most 52 of A-Z a-z 0-9 _ + . -)"
        )
    return f"{local}@{domain}"


def scoped_address(info: Info, domain: Optional[str] = None, prefix: str = "") -> str:
    """A fresh address that the key ``info`` describes may use, as the
    pytest fixture makes them: inside the key's first pattern (``prefix``
    follows the part before its ``*``, unless it starts with it already; a
    pattern without ``*`` names the one inbox the address is then on), at
    ``domain``, else at the server's ``address_domain``, else at
    ``burner.test``."""
    domain = domain or info.address_domain or "burner.test"
    patterns = info.key.inboxes
    if patterns and "*" not in patterns:
        first = patterns[0]
        if not first.endswith("*"):
            return f"{first}@{domain}"
        base = first[:-1]
        if not prefix.lower().startswith(base):
            prefix = base + prefix
    return new_address(domain, prefix)


class Burner:
    """A client of one burner server.

    ``url`` is the server's base URL (``http://127.0.0.1:8080``; a trailing
    ``/api/v1`` is accepted), ``key`` an API key (``bnr_…``). ``timeout`` is
    how many seconds a request other than a wait may take; ``max_wait`` the
    longest one request of ``wait_for_email`` is held (1 to 60, the API's
    limit and the default): lower it behind a proxy that cuts requests idle
    for less than a minute.

    Wherever an inbox is named (``to``), a local part (``alice``) or a
    whole address (``alice@inbox.test``) will do: burner files mail by
    local part, whatever the domain.
    """

    def __init__(self, url: str, key: str, *, timeout: float = 30.0, max_wait: int = _MAX_WAIT) -> None:
        if not url:
            raise ValueError("burner: url is required")
        if not key:
            raise ValueError("burner: key is required")
        if not re.match(r"https?://[^/]", url):
            raise ValueError(f"burner: url must be http:// or https://, not {url!r}")
        url = url.rstrip("/")
        if url.endswith("/api/v1"):
            url = url[: -len("/api/v1")]
        self.url = url
        if isinstance(max_wait, bool) or not isinstance(max_wait, int) or not 1 <= max_wait <= _MAX_WAIT:
            raise ValueError(f"burner: max_wait is an integer from 1 to 60, not {max_wait!r}")
        self._key = key
        self._timeout = timeout
        self._max_wait = max_wait

    def __repr__(self) -> str:
        return f"Burner({self.url!r})"

    def new_address(self, domain: str, prefix: str = "") -> str:
        """A fresh address at ``domain``; see :func:`new_address`."""
        return new_address(domain, prefix)

    def inbox(self, domain: str, prefix: str = "") -> "Inbox":
        """A fresh inbox at ``domain``, with the calls bound to it."""
        return Inbox(self, new_address(domain, prefix))

    def info(self) -> Info:
        """The server's domains, limits and features, and what the
        client's key may reach and do (``GET /api/v1/info``)."""
        return Info.from_json(self._json("/info"))

    # The core API.

    def list_emails(
        self,
        to: str,
        *,
        subject: Optional[str] = None,
        search: Optional[str] = None,
        body: Optional[str] = None,
        header: Optional[HeaderFilter] = None,
        from_: Optional[str] = None,
        since: Optional[Time] = None,
        before: Optional[Time] = None,
        limit: Optional[int] = None,
    ) -> List[Email]:
        """The emails of an inbox that pass the filters, newest first.

        At most one of ``subject``, ``search`` and ``body``; ``header`` only
        keeps mail whose header field ``Name`` contains ``value``; ``from_``
        (the API's ``from``) only mail whose sender's address or name
        contains it, in any case, and goes with every other filter;
        ``since`` and ``before`` bound ``received_at`` (exclusive);
        ``limit`` is 1 to 10 (10 when not given).
        """
        q = _filters(to, subject, search, body, header, from_, since)
        q["before"] = None if before is None else _seconds(before)
        q["limit"] = None if limit is None else str(limit)
        return [Email.from_json(e) for e in self._json("/emails", q)]

    def wait_for_email(
        self,
        to: str,
        subject: Optional[str] = None,
        *,
        search: Optional[str] = None,
        body: Optional[str] = None,
        header: Optional[HeaderFilter] = None,
        from_: Optional[str] = None,
        since: Optional[Time] = None,
        timeout: float = 30.0,
    ) -> Email:
        """The newest email of an inbox that passes the filters, waiting up
        to ``timeout`` seconds for one to arrive.

        The filters are :meth:`list_emails`'s. The API holds the request
        (``wait``, up to ``max_wait`` seconds at a time) until a delivery
        wakes it; this asks again until the time is up, then raises
        ``TimeoutError``. Give ``since`` to skip mail already there.
        """
        deadline = time.monotonic() + timeout
        q = _filters(to, subject, search, body, header, from_, since)
        q["limit"] = "1"
        while True:
            left = deadline - time.monotonic()
            # The API's wait is whole seconds from 1 to 60; a last fraction
            # of a second is rounded up rather than dropped.
            wait = min(self._max_wait, max(1, math.ceil(left)))
            q["wait"] = str(wait)
            got = self._json("/emails", q, timeout=wait + _WAIT_SLACK)
            if got:
                return Email.from_json(got[0])
            if time.monotonic() >= deadline:
                wanted = ", ".join(
                    f"{k}={v!r}"
                    for k, v in q.items()
                    if k in ("subject", "search", "body", "header", "from", "since") and v is not None
                )
                raise TimeoutError(
                    f"burner: no email for {q['to']}"
                    + (f" matching {wanted}" if wanted else "")
                    + f" within {timeout:g} s"
                )

    def get_email(self, id: str) -> Email:
        """One email by id."""
        return Email.from_json(self._json(_email_path(id)))

    def delete_email(self, id: str) -> None:
        """Deletes one email."""
        self._request("DELETE", _email_path(id))

    def clear_inbox(self, to: str) -> None:
        """Deletes every email of an inbox."""
        self._request("DELETE", "/inbox", {"to": local_part(to)})

    # What a test needs of a message beyond its fields.

    def raw(self, id: str) -> bytes:
        """The message exactly as received over SMTP, with burner's
        ``Received:`` header (``email.message_from_bytes`` reads it)."""
        return self._request("GET", _email_path(id, "raw"))[1]

    def text(self, id: str) -> str:
        """The text/plain part, else the visible text of the HTML part."""
        return self._request("GET", _email_path(id, "text"))[1].decode("utf-8")

    def links(self, id: str) -> List[str]:
        """The link targets of the body, in order."""
        return list(self._json(_email_path(id, "links")))

    def codes(self, id: str, pattern: Optional[str] = None) -> List[str]:
        """The one-time codes of the email, those after a keyword ("code",
        "verification", ...) first: take the first. ``pattern``, an RE2
        regular expression, replaces burner's rule: each match, or its
        first group."""
        return list(self._json(_email_path(id, "codes"), {"pattern": pattern}))

    def attachments(self, id: str) -> List[Attachment]:
        """The files of the message, numbered from 0 (at most 1,000)."""
        return [Attachment.from_json(a) for a in self._json(_email_path(id, "attachments"))]

    def attachment(self, id: str, n: int) -> bytes:
        """The bytes of file ``n`` of the message."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"burner: an attachment's index is an integer from 0, not {n!r}")
        return self._request("GET", f"{_email_path(id, 'attachments')}/{n}")[1]

    def auth(self, id: str, wait: Optional[int] = None) -> Auth:
        """What burner's MX saw of the message: the client's address, HELO
        and PTR, TLS, MAIL FROM, and its SPF, DKIM and DMARC verdicts,
        computed within seconds of its arrival.

        With ``wait`` (whole seconds, 1 to 60) the server holds the answer
        until the verdicts are in (``status`` ``"done"``) or that time has
        passed; without it, a fresh message may still be ``"pending"``::

            a = burner.auth(mail.id, wait=10)
            assert a.dmarc.result == "pass"
        """
        if wait is None:
            return Auth.from_json(self._json(_email_path(id, "auth")))
        if isinstance(wait, bool) or not isinstance(wait, int) or not 1 <= wait <= _MAX_WAIT:
            raise ValueError(f"burner: wait is an integer from 1 to 60, not {wait!r}")
        # Whole seconds up to max_wait a request, as wait_for_email asks.
        deadline = time.monotonic() + wait
        while True:
            w = min(self._max_wait, max(1, math.ceil(deadline - time.monotonic())))
            a = Auth.from_json(self._json(_email_path(id, "auth"), {"wait": str(w)}, timeout=w + _WAIT_SLACK))
            if a.status != "pending" or time.monotonic() >= deadline:
                return a

    # The wire (spec §13): the session log and fault rules.

    def sessions(
        self, to: Optional[str] = None, *, limit: Optional[int] = None, since: Optional[Time] = None
    ) -> List[Session]:
        """The SMTP sessions whose RCPTs named an inbox, accepted or
        refused, newest first: what burner answered the application, and
        why a mail did not arrive. Without ``to``, every session (for a key
        that reads every inbox). ``limit`` is 1 to 100 (20 when not given);
        ``since`` keeps sessions started after it."""
        q: Dict[str, Optional[str]] = {
            "to": None if to is None else local_part(to),
            "limit": None if limit is None else str(limit),
            "since": None if since is None else _seconds(since),
        }
        return [Session.from_json(s) for s in self._json("/sessions", q)]

    @property
    def faults(self) -> "Faults":
        """Fault rules: ``faults.arm(...)``, ``faults.list()``,
        ``faults.disarm(rule)``."""
        return Faults(self)

    def events(
        self,
        to: str,
        *,
        last_event_id: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Iterator[Email]:
        """The emails that arrive in an inbox from now on, as they arrive
        (the API's Server-Sent Events).

        When the connection drops, it reconnects after the delay the server
        asked for, with ``Last-Event-ID``, so nothing that arrived meanwhile
        is missed. ``last_event_id`` starts after that email instead of now.
        With ``timeout``, the generator ends after that many seconds; else
        when the loop breaks. An answer other than 200 (a bad inbox, a
        refused key) raises BurnerError.
        """
        to = local_part(to)
        deadline = None if timeout is None else time.monotonic() + timeout
        retry = 2.0
        last_id = last_event_id
        url = f"{self.url}/api/v1/events?{_encode({'to': to})}"

        def left() -> float:
            return _EVENTS_READ_TIMEOUT if deadline is None else deadline - time.monotonic()

        while left() > 0:
            headers = {"Accept": "text/event-stream"}
            if last_id:
                headers["Last-Event-ID"] = last_id
            try:
                resp = urllib.request.urlopen(
                    self._req("GET", url, headers), timeout=min(_EVENTS_READ_TIMEOUT, left())
                )
            except urllib.error.HTTPError as e:
                err = _error_of(e)
                if e.code < 500:
                    raise err from None
                time.sleep(max(0.0, min(retry, left())))
                continue
            except (OSError, http.client.HTTPException):
                # Unreachable for now: try again, as EventSource does.
                time.sleep(max(0.0, min(retry, left())))
                continue
            try:
                for ev in _read_sse(resp):
                    if ev.retry is not None:
                        retry = ev.retry / 1000
                    if ev.id is not None:
                        last_id = ev.id
                    if ev.event == "email" and ev.data:
                        yield Email.from_json(json.loads(ev.data))
            except (OSError, http.client.HTTPException):
                pass  # a dropped or silent connection: open another below
            finally:
                resp.close()
            time.sleep(max(0.0, min(retry, left())))

    # Plumbing.

    def _req(self, method: str, url: str, headers: Dict[str, str], data: Optional[bytes] = None) -> urllib.request.Request:
        h = {"Authorization": f"Bearer {self._key}", "User-Agent": f"burner-client-python/{__version__}"}
        h.update(headers)
        return urllib.request.Request(url, method=method, headers=h, data=data)

    def _request(
        self,
        method: str,
        path: str,
        query: Optional[Dict[str, Optional[str]]] = None,
        *,
        timeout: Optional[float] = None,
        body: Any = None,
    ) -> Tuple[http.client.HTTPMessage, bytes]:
        url = f"{self.url}/api/v1{path}"
        if query:
            qs = _encode(query)
            if qs:
                url += "?" + qs
        data, headers = None, {}
        if body is not None:
            data, headers = json.dumps(body).encode(), {"Content-Type": "application/json"}
        req = self._req(method, url, headers, data)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self._timeout) as resp:
                return resp.headers, resp.read()
        except urllib.error.HTTPError as e:
            raise _error_of(e) from None

    def _json(
        self, path: str, query: Optional[Dict[str, Optional[str]]] = None, *, timeout: Optional[float] = None
    ) -> Any:
        return json.loads(self._request("GET", path, query, timeout=timeout)[1])


class Faults:
    """Fault rules (spec §13.2), which make burner's SMTP fail on purpose
    so that a test can try its application's failure paths. The server
    needs ``faults.enabled = true``; else every call raises BurnerError
    404."""

    def __init__(self, burner: Burner) -> None:
        self.burner = burner

    def arm(
        self,
        inbox: str,
        stage: str,
        reply: str = "",
        *,
        times: int = 0,
        delay: Union[float, int, str] = 0,
        disconnect: bool = False,
        per_minute: int = 0,
    ) -> FaultRule:
        """Arms a rule for the inboxes of ``inbox`` (a pattern as for keys,
        or an address, whose domain is dropped) at ``stage``, "rcpt" or
        "data": ``reply`` ("451 4.3.0 Try again later") instead of 250,
        ``times`` times (0: until disarmed), after ``delay`` (seconds, or a
        Go duration such as "1.5s"); with ``disconnect`` the connection
        closes without a reply; with ``per_minute`` only messages beyond
        that many a minute are answered. Returns the rule, with its id."""
        if not isinstance(delay, str):
            delay = f"{delay}s"
        body = {
            "inbox": local_part(inbox),
            "stage": stage,
            "reply": reply,
            "times": times,
            "delay": delay,
            "disconnect": disconnect,
            "perMinute": per_minute,
        }
        return FaultRule.from_json(json.loads(self.burner._request("POST", "/faults", body=body)[1]))

    def list(self) -> List[FaultRule]:
        """The rules inside the key's scope, spent ones too, in creation order."""
        return [FaultRule.from_json(r) for r in self.burner._json("/faults")]

    def disarm(self, rule: Union[str, FaultRule]) -> None:
        """Disarms a rule (its id, or the rule); one gone already raises
        BurnerError 404."""
        rule_id = rule if isinstance(rule, str) else rule.id
        self.burner._request("DELETE", "/faults/" + urllib.parse.quote(rule_id, safe=""))


class Inbox:
    """An address and the client's calls bound to its inbox, as the pytest
    fixture ``inbox`` gives it."""

    def __init__(self, burner: Burner, address: str) -> None:
        self.burner = burner
        #: The whole address, to give the application under test.
        self.address = address
        #: Its local part, the API's ``to``.
        self.to = local_part(address)

    def __repr__(self) -> str:
        return f"Inbox({self.address!r})"

    def wait_for_email(self, subject: Optional[str] = None, **filters: Any) -> Email:
        """See :meth:`Burner.wait_for_email`."""
        return self.burner.wait_for_email(self.to, subject, **filters)

    def list_emails(self, **filters: Any) -> List[Email]:
        """See :meth:`Burner.list_emails`."""
        return self.burner.list_emails(self.to, **filters)

    def codes(self, id: str, pattern: Optional[str] = None) -> List[str]:
        return self.burner.codes(id, pattern)

    def links(self, id: str) -> List[str]:
        return self.burner.links(id)

    def clear(self) -> None:
        """Deletes every email of the inbox."""
        self.burner.clear_inbox(self.to)

    def sessions(self, **kwargs: Any) -> List[Session]:
        """See :meth:`Burner.sessions`: the SMTP sessions that named this inbox."""
        return self.burner.sessions(self.to, **kwargs)


def _filters(
    to: str,
    subject: Optional[str],
    search: Optional[str],
    body: Optional[str],
    header: Optional[HeaderFilter],
    from_: Optional[str],
    since: Optional[Time],
) -> Dict[str, Optional[str]]:
    if isinstance(header, tuple):
        header = f"{header[0]}:{header[1]}"
    return {
        "to": local_part(to),
        "subject": subject,
        "search": search,
        "body": body,
        "header": header,
        "from": from_,
        "since": None if since is None else _seconds(since),
    }


def _encode(q: Dict[str, Optional[str]]) -> str:
    # quote, not quote_plus: a space is %20 and a "+" is %2B, which every
    # parameter reads alike (the API takes a bare "+" in "to" as a "+").
    return urllib.parse.urlencode(
        [(k, v) for k, v in q.items() if v is not None and v != ""], quote_via=urllib.parse.quote
    )


def _email_path(id: str, sub: str = "") -> str:
    p = "/emails/" + urllib.parse.quote(id, safe="")
    return f"{p}/{sub}" if sub else p


def _error_of(e: urllib.error.HTTPError) -> BurnerError:
    message = e.reason if isinstance(e.reason, str) and e.reason else f"HTTP {e.code}"
    try:
        raw = e.read()
    except (OSError, http.client.HTTPException):
        raw = b""
    finally:
        e.close()
    try:
        d = json.loads(raw)
        if isinstance(d, dict) and isinstance(d.get("error"), str):
            message = d["error"]
    except ValueError:
        if raw.strip():
            message = raw.decode("utf-8", "replace").strip()
    return BurnerError(e.code, message)


@dataclass
class _Event:
    id: Optional[str] = None
    event: str = "message"
    data: str = ""
    retry: Optional[int] = None


def _read_sse(resp: http.client.HTTPResponse) -> Iterator[_Event]:
    """The events of a text/event-stream, as the HTML standard reads them
    (burner ends lines with LF; CRLF is taken too)."""
    ev = _Event()
    has_data = False
    while True:
        raw = resp.readline()
        if not raw:
            return  # the server closed the stream
        line = raw.decode("utf-8", "replace").rstrip("\n").rstrip("\r")
        if line == "":
            if has_data or ev.id is not None or ev.retry is not None:
                yield ev
            ev, has_data = _Event(), False
            continue
        if line.startswith(":"):
            continue  # a comment: burner's keep-alives
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "id" and "\0" not in value:
            ev.id = value
        elif field == "event":
            ev.event = value
        elif field == "data":
            ev.data = f"{ev.data}\n{value}" if has_data else value
            has_data = True
        elif field == "retry" and value.isdigit():
            ev.retry = int(value)
