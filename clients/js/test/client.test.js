// The client against a real burner: mail goes in over SMTP and is read
// back through every call of the client.

import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, test } from "node:test";

import { Burner, BurnerError, TimeoutError, localPart, newAddress, scopedAddress } from "../dist/index.js";
import { startBurner } from "./support/burner.js";

let srv;
let burner;

// A TCP relay between a client and burner, to cut connections as a
// network would and to see what the client sends.
async function startRelay(upstream) {
  const conns = new Set();
  const relay = { requests: [], bytesBack: 0 };
  const server = net.createServer((down) => {
    const up = net.connect(Number(upstream.port), upstream.hostname);
    conns.add(down).add(up);
    // Each request's head, also of requests on a kept-alive connection.
    down.on("data", (d) => {
      const text = d.toString("latin1");
      if (/^(GET|HEAD|DELETE) \//.test(text)) relay.requests.push(text);
    });
    up.on("data", (d) => (relay.bytesBack += d.length));
    down.pipe(up).pipe(down);
    for (const [a, b] of [[down, up], [up, down]]) {
      a.on("error", () => b.destroy());
      a.on("close", () => {
        conns.delete(a);
        b.destroy();
      });
    }
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  relay.url = `http://127.0.0.1:${server.address().port}`;
  relay.cut = () => {
    for (const c of conns) c.destroy();
  };
  relay.close = async () => {
    relay.cut();
    await new Promise((r) => server.close(r));
  };
  return relay;
}

async function until(what, cond) {
  const deadline = Date.now() + 20_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

before(async () => {
  srv = await startBurner();
  burner = new Burner({ url: srv.url, key: srv.key });
});

after(async () => {
  await srv?.stop();
});

describe("a sign-up flow", () => {
  test("waits for a mail sent over SMTP and reads its code", async () => {
    const address = burner.newAddress("inbox.test", "signup-");
    // The wait is under way before the mail is sent: it is the delivery
    // that answers it, not a mail already there.
    const waiting = burner.waitForEmail({ to: address, subject: "verify", timeout: 30 });
    await srv.send({
      to: address,
      subject: "Please verify your address",
      text: "Order 4821 has shipped.\nVerification code: 551 082\nOr open https://app.test/verify?t=abc\n",
    });
    const mail = await waiting;
    assert.equal(mail.toAddress, address);
    assert.equal(mail.subject, "Please verify your address");
    assert.equal(mail.fromAddress, "sender@example.test");
    assert.deepEqual(await burner.codes(mail.id), ["551082", "4821"]);
    assert.deepEqual(await burner.codes(mail.id, { pattern: String.raw`code: (\d{3} \d{3})` }), ["551 082"]);
    assert.deepEqual(await burner.links(mail.id), ["https://app.test/verify?t=abc"]);
    assert.match(await burner.text(mail.id), /^Order 4821 has shipped\.\r?\nVerification code: 551 082/);
    const raw = await burner.raw(mail.id);
    assert.match(raw, /^Received: /);
    assert.match(raw, /\r\nSubject: Please verify your address\r\n/);
    assert.deepEqual(await burner.getEmail(mail.id), mail);
  });

  test("a wait with nothing to find throws TimeoutError", async () => {
    const to = localPart(newAddress("inbox.test"));
    const t0 = Date.now();
    await assert.rejects(burner.waitForEmail({ to, timeout: 1 }), (err) => {
      assert.ok(err instanceof TimeoutError, String(err));
      assert.match(err.message, new RegExp(`no email for ${to} within 1 s`));
      return true;
    });
    const took = Date.now() - t0;
    assert.ok(took >= 900 && took < 10_000, `the wait took ${took} ms`);
  });

  test("a wait longer than one request asks again", async () => {
    // maxWait 1 stands for the API's 60 s: a wait of 20 s is many
    // requests, and a mail that comes after the first is still found.
    const relay = await startRelay(new URL(srv.url));
    try {
      const client = new Burner({ url: relay.url, key: srv.key, maxWait: 1 });
      const address = newAddress("inbox.test");
      const waiting = client.waitForEmail({ to: address, timeout: 20 });
      await until("a second request", () => relay.requests.length >= 2);
      assert.match(relay.requests[0], /[?&]wait=1[& ]/);
      await srv.send({ to: address, subject: "late", text: "after the first request" });
      assert.equal((await waiting).subject, "late");
    } finally {
      await relay.close();
    }
    assert.throws(() => new Burner({ url: srv.url, key: srv.key, maxWait: 61 }), TypeError);
  });

  test("a wait returns a mail already there at once", async () => {
    const address = newAddress("inbox.test");
    await srv.send({ to: address, subject: "already here", text: "hello" });
    const t0 = Date.now();
    const mail = await burner.waitForEmail({ to: address, timeout: 20 });
    assert.equal(mail.subject, "already here");
    assert.ok(Date.now() - t0 < 5000);
    // since skips it: nothing newer comes.
    const since = new Date(Date.parse(mail.receivedAt));
    await assert.rejects(burner.waitForEmail({ to: address, since, timeout: 1 }), TimeoutError);
  });
});

describe("auth", () => {
  test("says what the MX saw, and its verdicts once they are in", async () => {
    const address = burner.newAddress("inbox.test", "auth-");
    await srv.send({ to: address, subject: "authenticated?", text: "hi" });
    const mail = await burner.waitForEmail({ to: address, timeout: 30 });
    // Without a DNS answer every verdict is temperror, within seconds.
    const a = await burner.auth(mail.id, 30);
    assert.equal(a.status, "done");
    assert.deepEqual(a.client, { ip: "127.0.0.1", helo: "client.test", ptr: null, fcrdns: false });
    assert.equal(a.tls, null);
    assert.equal(a.mailFrom, "sender@example.test");
    assert.deepEqual(a.spf, { result: "temperror", domain: "example.test" });
    assert.deepEqual(a.dkim, []);
    assert.equal(a.dmarc?.result, "temperror");
    assert.match(a.authenticationResults ?? "", /^localhost; spf=temperror .*smtp\.mailfrom=example\.test; dkim=none; dmarc=temperror /);
    assert.deepEqual(await burner.auth(mail.id), a);
    await assert.rejects(burner.auth(mail.id, 0), TypeError);
    await assert.rejects(burner.auth(mail.id, 61), TypeError);
    await assert.rejects(burner.auth("8b0e2f0e-6d7c-4b1a-9c39-5c2f0c4d8e11"), (err) => err instanceof BurnerError && err.status === 404);
  });
});

describe("listing", () => {
  const to = `list-${localPart(newAddress("x.test"))}+tag`; // a "+" must reach the API as a "+"
  const address = `${to}@inbox.test`;
  const sent = [];

  before(async () => {
    for (let i = 0; i < 3; i++) {
      await srv.send({
        to: address,
        subject: `Message ${i}`,
        text: i === 1 ? "the middle one says ahoy" : "plain",
        headers: { "X-Test-Run": `run-${i}` },
      });
    }
    const all = await burner.listEmails({ to });
    sent.push(...all.reverse()); // oldest first
  });

  test("newest first, with the eight fields", async () => {
    const all = await burner.listEmails({ to: address });
    assert.deepEqual(
      all.map((e) => e.subject),
      ["Message 2", "Message 1", "Message 0"],
    );
    for (const e of all) {
      assert.deepEqual(Object.keys(e).sort(), [
        "body", "fromAddress", "fromName", "id", "read", "receivedAt", "subject", "toAddress",
      ]);
      assert.equal(e.toAddress, address);
    }
  });

  test("filters: subject, body, search, header, limit", async () => {
    const subjects = async (o) => (await burner.listEmails({ to, ...o })).map((e) => e.subject);
    assert.deepEqual(await subjects({ subject: "message 1" }), ["Message 1"]);
    assert.deepEqual(await subjects({ body: "AHOY" }), ["Message 1"]);
    assert.deepEqual(await subjects({ search: "middle ahoy" }), ["Message 1"]);
    assert.deepEqual(await subjects({ header: "X-Test-Run:run-2" }), ["Message 2"]);
    assert.deepEqual(await subjects({ header: ["x-test-run", "RUN-0"] }), ["Message 0"]);
    assert.deepEqual(await subjects({ limit: 2 }), ["Message 2", "Message 1"]);
  });

  test("from: the sender's address or name, with any other filter and in a wait", async () => {
    const address = newAddress("inbox.test", "from-");
    const waiting = burner.waitForEmail({ to: address, from: "SHOP.test", timeout: 30 });
    await srv.send({ to: address, subject: "Your code", text: "not from the shop" });
    await srv.send({ to: address, from: "noreply@shop.test", subject: "Your code", text: "1234" });
    assert.equal((await waiting).fromAddress, "noreply@shop.test");
    const froms = async (o) => (await burner.listEmails({ to: address, ...o })).map((e) => e.fromAddress);
    assert.deepEqual(await froms({ from: "noreply@" }), ["noreply@shop.test"]);
    assert.deepEqual(await froms({ from: "sender@", subject: "code" }), ["sender@example.test"]);
    assert.deepEqual(await froms({ from: "Sender" }), ["noreply@shop.test", "sender@example.test"]); // the name, "Sender <…>"
    assert.deepEqual(await froms({ from: "nobody" }), []);
  });

  test("since and before page through the inbox", async () => {
    const secs = (e) => Date.parse(e.receivedAt) / 1000;
    assert.deepEqual(
      (await burner.listEmails({ to, since: secs(sent[0]) })).map((e) => e.id),
      [sent[2].id, sent[1].id],
    );
    assert.deepEqual(
      (await burner.listEmails({ to, before: new Date(Date.parse(sent[2].receivedAt)) })).map((e) => e.id),
      [sent[1].id, sent[0].id],
    );
    assert.deepEqual(
      (await burner.listEmails({ to, since: secs(sent[0]), before: secs(sent[2]) })).map((e) => e.id),
      [sent[1].id],
    );
  });

  test("the API's refusals throw BurnerError with its message", async () => {
    const refused = async (p, status, message) => {
      await assert.rejects(p, (err) => {
        assert.ok(err instanceof BurnerError, String(err));
        assert.equal(err.status, status);
        assert.equal(err.message, message);
        return true;
      });
    };
    await refused(
      burner.listEmails({ to, subject: "a", body: "b" }),
      400,
      "Only one of subject, search, or body may be specified.",
    );
    await refused(burner.listEmails({ to, limit: 11 }), 400, "'limit' must be an integer from 1 to 10.");
    await refused(burner.listEmails({ to: "no spaces" }), 400,
      "Invalid local part. Only alphanumeric characters and _-+. are allowed.");
    await refused(burner.listEmails({ to, header: "no colon" }), 400,
      "'header' must be Name:value, like X-Test-Run:42.");
    await refused(burner.codes(sent[0].id, { pattern: "(" }), 400, "'pattern' must be a valid regular expression.");
    await refused(burner.getEmail("00000000-0000-4000-8000-000000000000"), 404, "Email not found");
    await refused(burner.attachment(sent[0].id, 0), 404, "Attachment not found");
    const stranger = new Burner({ url: srv.url, key: "bnr_not-a-key" });
    await refused(stranger.listEmails({ to }), 401, "Missing or invalid API key.");
  });
});

describe("attachments, delete and clear", () => {
  test("lists and downloads a file", async () => {
    const address = newAddress("inbox.test", "files-");
    const boundary = "b0undary";
    await srv.send({
      to: address,
      subject: "Your invoice",
      headers: { "Content-Type": `multipart/mixed; boundary="${boundary}"` },
      text: [
        `--${boundary}`,
        "Content-Type: text/plain; charset=utf-8",
        "",
        "Invoice attached.",
        `--${boundary}`,
        "Content-Type: application/octet-stream",
        'Content-Disposition: attachment; filename="data.bin"',
        "Content-Transfer-Encoding: base64",
        "",
        Buffer.from([0, 1, 2, 250, 255]).toString("base64"),
        `--${boundary}--`,
        "",
      ].join("\r\n"),
    });
    const mail = await burner.waitForEmail({ to: address, timeout: 20 });
    assert.deepEqual(await burner.attachments(mail.id), [
      { index: 0, filename: "data.bin", contentType: "application/octet-stream", size: 5, contentId: "" },
    ]);
    assert.deepEqual(await burner.attachment(mail.id, 0), new Uint8Array([0, 1, 2, 250, 255]));
    assert.equal(await burner.text(mail.id), "Invoice attached.");
  });

  test("deleteEmail deletes one, clearInbox the rest", async () => {
    const address = newAddress("inbox.test", "del-");
    for (const s of ["one", "two", "three"]) await srv.send({ to: address, subject: s, text: s });
    const all = await burner.listEmails({ to: address });
    assert.equal(all.length, 3);
    await burner.deleteEmail(all[0].id);
    await assert.rejects(burner.getEmail(all[0].id), { name: "BurnerError", status: 404 });
    assert.equal((await burner.listEmails({ to: address })).length, 2);
    await burner.clearInbox(address);
    assert.deepEqual(await burner.listEmails({ to: address }), []);
    await burner.clearInbox(address); // an empty inbox clears too
  });
});

describe("newAddress", () => {
  test("gives valid, different local parts", () => {
    const seen = new Set();
    for (let i = 0; i < 100; i++) {
      const a = newAddress("inbox.test", "ci-");
      assert.match(a, /^ci-[a-z0-9]{12}@inbox\.test$/);
      seen.add(a);
    }
    assert.equal(seen.size, 100);
    assert.throws(() => newAddress("inbox.test", "no spaces "), TypeError);
    assert.throws(() => newAddress("inbox.test", "x".repeat(53)), TypeError);
    assert.throws(() => newAddress(""), TypeError);
    assert.equal(localPart("a.b+c@d.test"), "a.b+c");
  });

  test("Burner checks its options", () => {
    assert.equal(new Burner({ url: "http://127.0.0.1:1/api/v1/", key: "k" }).url, "http://127.0.0.1:1");
    for (const [url, key] of [["", "k"], ["127.0.0.1:8080", "k"], ["ftp://h", "k"], ["http://h", ""], ["http://[", "k"]]) {
      assert.throws(() => new Burner({ url, key }), TypeError, `${url} ${key}`);
    }
  });
});

describe("info and scopedAddress", () => {
  test("info says what the server and the key are", async () => {
    const info = await burner.info();
    assert.match(info.version, /./);
    assert.deepEqual(info.domains, ["inbox.test", "other.test"]);
    assert.equal(info.addressDomain, "inbox.test");
    assert.deepEqual(info.key, { name: "test", inboxes: ["*"], readOnly: false });
    assert.deepEqual(info.limits, { maxMessageBytes: 10485760, maxRecipients: 100, maxListLimit: 10 });
    assert.equal(info.features.mcp, true);
    assert.equal(info.features.webhooks, false);
    assert.equal(info.features.faults, true);
    const ro = await new Burner({ url: srv.url, key: srv.keys["scoped-ro"] }).info();
    assert.deepEqual(ro.key, { name: "scoped-ro", inboxes: ["team-*"], readOnly: true });
  });

  test("scopedAddress stays inside the key's first pattern", () => {
    const info = (inboxes, addressDomain = "inbox.test") => ({ addressDomain, key: { name: "k", inboxes, readOnly: false } });
    assert.match(scopedAddress(info(["*"]), { prefix: "pw-" }), /^pw-[a-z0-9]{12}@inbox\.test$/);
    assert.match(scopedAddress(info(["team-*", "alice"]), { prefix: "pw-" }), /^team-pw-[a-z0-9]{12}@inbox\.test$/);
    // A prefix inside the pattern already is kept as it is.
    assert.match(scopedAddress(info(["team-*"]), { prefix: "Team-ci-" }), /^Team-ci-[a-z0-9]{12}@inbox\.test$/);
    assert.match(scopedAddress(info(["team-*"])), /^team-[a-z0-9]{12}@inbox\.test$/);
    // A pattern that names an inbox is that inbox; "*" anywhere is every inbox.
    assert.equal(scopedAddress(info(["alice", "team-*"]), { prefix: "pw-", domain: "d.test" }), "alice@d.test");
    assert.match(scopedAddress(info(["alice", "*"]), { prefix: "pw-" }), /^pw-[a-z0-9]{12}@inbox\.test$/);
    // The domain: the one given, else addressDomain, else burner.test.
    assert.match(scopedAddress(info(["*"], "")), /^[a-z0-9]{12}@burner\.test$/);
  });
});

describe("events", () => {
  test("streams arrivals and resumes with Last-Event-ID after a dropped connection", async () => {
    const relay = await startRelay(new URL(srv.url));
    const relayed = new Burner({ url: relay.url, key: srv.key });

    const address = newAddress("inbox.test", "ev-");
    const ctl = new AbortController();
    const it = relayed.events({ to: address, signal: ctl.signal });
    try {
      const first = it.next();
      // The stream is open once burner's first bytes come back.
      await until("the stream to open", () => relay.bytesBack > 0);
      await srv.send({ to: address, subject: "first", text: "1" });
      const e1 = (await first).value;
      assert.equal(e1.subject, "first");
      assert.equal(e1.toAddress, address);

      // Cut the connection, then deliver while the client is away.
      const before = relay.requests.length;
      relay.cut();
      await srv.send({ to: address, subject: "second", text: "2" });
      const e2 = (await it.next()).value;
      assert.equal(e2.subject, "second");
      assert.equal(relay.requests.length, before + 1, "one reconnection");
      assert.match(relay.requests.at(-1), new RegExp(`\r\nlast-event-id: ${e1.id}\r\n`, "i"));

      // And on: a third arrives on the new connection.
      const third = it.next();
      await srv.send({ to: address, subject: "third", text: "3" });
      assert.equal((await third).value.subject, "third");

      // A stream started after an id replays what came after it.
      const replay = burner.events({ to: address, lastEventId: e1.id });
      assert.deepEqual(
        [(await replay.next()).value.subject, (await replay.next()).value.subject],
        ["second", "third"],
      );
      await replay.return();
    } finally {
      ctl.abort();
      // An aborted stream ends without an error.
      assert.deepEqual(await it.next(), { value: undefined, done: true });
      await relay.close();
    }
  });

  test("a refused stream throws BurnerError", async () => {
    const it = burner.events({ to: "bad inbox" });
    await assert.rejects(it.next(), { name: "BurnerError", status: 400 });
  });
});

describe("sessions and fault rules", () => {
  test("a 451 armed twice, then accepted: the session log tells each try", async () => {
    const to = newAddress("inbox.test", "retry-");
    const rule = await burner.faults.arm({ inbox: localPart(to), stage: "rcpt", reply: "451 4.3.0 Try again later", times: 2 });
    assert.equal(rule.used, 0);
    assert.equal(rule.delay, "0s");
    const tries = [];
    for (let i = 0; i < 3; i++) {
      try {
        await srv.send({ to, subject: "order", text: "thanks" });
        tries.push(250);
      } catch (err) {
        tries.push(Number(/got (\d{3})/.exec(err.message)?.[1]));
      }
    }
    assert.deepEqual(tries, [451, 451, 250]);
    const [spent] = (await burner.faults.list()).filter((r) => r.id === rule.id);
    assert.equal(spent.used, 2);
    let sessions = [];
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
      sessions = await burner.sessions(to);
      if (sessions.filter((s) => s.endedAt !== null).length === 3) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual(sessions.map((s) => s.outcome), ["delivered", "faulted", "faulted"]);
    assert.equal(sessions[1].recipients[0].fault, rule.id);
    assert.equal(sessions[1].recipients[0].reply, "451 4.3.0 Try again later");
    const [mail] = await burner.listEmails({ to });
    assert.deepEqual(sessions[0].emails, [mail.id]);
    assert.deepEqual(await burner.sessions(to, { limit: 1 }), [sessions[0]]);
    await burner.faults.disarm(rule);
    assert.equal((await burner.faults.list()).some((r) => r.id === rule.id), false);
  });

  test("delay as seconds, and the API's refusals", async () => {
    const rule = await burner.faults.arm({ inbox: "slow-*", stage: "data", disconnect: true, delay: 1.5, perMinute: 3 });
    assert.equal(rule.delay, "1.5s");
    assert.equal(rule.perMinute, 3);
    await burner.faults.disarm(rule.id);
    await assert.rejects(burner.faults.disarm(rule.id), (err) => err instanceof BurnerError && err.status === 404 && err.message === "Fault not found");
    await assert.rejects(
      burner.faults.arm({ inbox: "x", stage: "helo", reply: "451" }),
      (err) => err instanceof BurnerError && err.status === 400 && err.message === "'stage' must be \"rcpt\" or \"data\".",
    );
    const ro = new Burner({ url: srv.url, key: srv.keys["scoped-ro"] });
    await assert.rejects(
      ro.faults.arm({ inbox: "team-1", stage: "rcpt", reply: "451" }),
      (err) => err instanceof BurnerError && err.status === 403 && err.message === "This API key is read-only.",
    );
    await assert.rejects(ro.sessions(), (err) => err instanceof BurnerError && err.status === 403);
    await assert.rejects(burner.sessions("a b"), (err) => err instanceof BurnerError && err.status === 400);
  });
});
