// burner-client: the API of burner, a self-hosted disposable inbox, for
// test suites and agents. No runtime dependencies: Node's own fetch.
// The reference of every route is docs/api.md; the types of what the
// server answers are generated from its OpenAPI document (openapi.ts).

import { getRandomValues } from "node:crypto";
import type { components, operations } from "./openapi.js";

/** One received email, as one recipient got it (docs/api.md, "The Email object"). */
export type Email = components["schemas"]["Email"];

/** One file of a message, as `attachments` lists it. */
export type Attachment = components["schemas"]["Attachment"];

/**
 * What `GET /api/v1/info` says of the server and of the client's key: the
 * inbox domains, the domain addresses are made on (`addressDomain`), the
 * key's name, patterns (`["*"]` for every inbox) and mode, the limits and
 * the optional parts that are on.
 */
export type Info = components["schemas"]["Info"];

/**
 * What burner's MX saw of a message (spec §12): the client, TLS, MAIL FROM
 * and the SPF, DKIM and DMARC verdicts, as `auth` returns them. `spf`,
 * `dmarc` and `authenticationResults` are null until `status` is "done".
 */
export type Auth = components["schemas"]["Auth"];

/**
 * One SMTP session of burner's session log (docs/api.md, "The session
 * log"): who spoke, what each recipient and the data were answered, the
 * emails stored and the transcript.
 */
export type Session = components["schemas"]["Session"];

/** An armed fault rule (docs/api.md, "Fault rules"). */
export type FaultRule = components["schemas"]["FaultRule"];

/**
 * A fault rule to arm: `inbox` (a pattern as for keys) and `stage`
 * ("rcpt" or "data"), a `reply` ("451 4.3.0 Try again later") unless
 * `disconnect`, and optionally `times`, `delay` (a Go duration such as
 * "1.5s", or seconds as a number) and `perMinute`.
 */
export type FaultRuleInput = Omit<components["schemas"]["FaultRuleInput"], "delay"> & {
  delay?: string | number;
};

export interface SessionsOptions {
  /** At most this many sessions, from 1 to 100; 20 when not given. */
  limit?: number;
  /** Only sessions started strictly after this time. */
  since?: Time;
}

type ListQuery = operations["listEmails"]["parameters"]["query"];

/** How to reach a burner server. */
export interface BurnerOptions {
  /** The server's base URL, such as `http://127.0.0.1:8080` (a trailing `/api/v1` is accepted). */
  url: string;
  /** An API key (`bnr_…`), made with `burner keys create`. */
  key: string;
  /** Seconds a request other than a wait may take; 30 when not given. */
  requestTimeout?: number;
  /**
   * The longest one request of `waitForEmail` is held, in seconds, from 1
   * to 60 (the API's limit, and the default): lower it behind a proxy
   * that cuts requests idle for less than a minute.
   */
  maxWait?: number;
}

/**
 * An inbox: its local part (`alice`), or a whole address
 * (`alice@inbox.test`), whose domain is dropped: burner files mail by local
 * part whatever the domain.
 */
export type Inbox = string;

/** A Unix time in seconds, or a Date (kept to the millisecond, as burner compares). */
export type Time = number | Date;

/** `Name:value`, or the two apart: only mail whose header `Name` contains `value`. */
export type HeaderFilter = string | [name: string, value: string];

/** The filters of a list. At most one of `subject`, `search` and `body`; `from` and `header` go with any. */
export interface Filters {
  /** Case-insensitive substring of the subject. */
  subject?: string;
  /** Every term (or "quoted phrase") must occur in the subject, sender or body text. */
  search?: string;
  /** Case-insensitive substring of the body text, its links or its text/plain part. */
  body?: string;
  /** Only mail with this header field containing this value. */
  header?: HeaderFilter;
  /** Case-insensitive substring of the sender's address or name; goes with every other filter. */
  from?: string;
  /** Only mail received strictly after this time. */
  since?: Time;
}

export interface ListOptions extends Filters {
  to: Inbox;
  /** Only mail received strictly before this time: page with the oldest `receivedAt` you have. */
  before?: Time;
  /** At most this many emails, from 1 to 10; 10 when not given. */
  limit?: number;
}

export interface WaitOptions extends Filters {
  to: Inbox;
  /** Seconds to wait in all; 30 when not given. */
  timeout?: number;
  /** Stops the wait early; the promise then rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface EventsOptions {
  to: Inbox;
  /** Start after this email (an id), as a reconnecting stream does; from now when not given. */
  lastEventId?: string;
  /** Ends the iteration (without an error) when aborted. */
  signal?: AbortSignal;
}

/** An answer of the API other than success: `status` and the API's own message. */
export class BurnerError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = "BurnerError";
    this.status = status;
  }
}

/** Nothing matching arrived within the time a wait was given. */
export class TimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TimeoutError";
  }
}

// The longest wait the API holds one request (docs/api.md, "wait").
const maxWait = 60;
// Slack a held request gets beyond its wait before the client gives up on
// the connection: the server answers at the end of the wait, this covers
// the network and a busy machine.
const waitSlack = 15;

const localPartRe = /^[A-Za-z0-9_+.-]{1,64}$/;

/** The local part of an inbox given as a local part or as an address. */
export function localPart(inbox: Inbox): string {
  const at = inbox.lastIndexOf("@");
  return at < 0 ? inbox : inbox.slice(0, at);
}

const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";

/**
 * A fresh address at `domain`: `prefix` (when given) and 12 random
 * lower-case letters and digits (62 bits), a local part the API accepts.
 */
export function newAddress(domain: string, prefix = ""): string {
  if (!domain || /[\s@]/.test(domain)) {
    throw new TypeError(`burner: not a domain: ${JSON.stringify(domain)}`);
  }
  const bytes = getRandomValues(new Uint8Array(12));
  let random = "";
  for (const b of bytes) random += alphabet[b % alphabet.length];
  const local = prefix + random;
  if (!localPartRe.test(local)) {
    throw new TypeError(
      `burner: the prefix ${JSON.stringify(prefix)} makes no valid local part (at most 52 of A-Z a-z 0-9 _ + . -)`,
    );
  }
  return `${local}@${domain}`;
}

/**
 * A fresh address that the key `info` describes may use, as the fixtures
 * make them: inside the key's first pattern (`prefix` follows the part
 * before its `*`, unless it starts with it already; a pattern without `*`
 * names the one inbox the address is then on), at `domain`, else at the
 * server's `addressDomain`, else at `burner.test`.
 */
export function scopedAddress(info: Info, options: { domain?: string; prefix?: string } = {}): string {
  const domain = options.domain || info.addressDomain || "burner.test";
  let prefix = options.prefix ?? "";
  const patterns = info.key.inboxes;
  if (patterns.length > 0 && !patterns.includes("*")) {
    const first = patterns[0];
    if (!first.endsWith("*")) return `${first}@${domain}`;
    const base = first.slice(0, -1);
    if (!prefix.toLowerCase().startsWith(base)) prefix = base + prefix;
  }
  return newAddress(domain, prefix);
}

function seconds(t: Time): number {
  return t instanceof Date ? t.getTime() / 1000 : t;
}

function filterQuery(to: Inbox, f: Filters): ListQuery {
  const q: ListQuery = { to: localPart(to) };
  if (f.subject !== undefined) q.subject = f.subject;
  if (f.search !== undefined) q.search = f.search;
  if (f.body !== undefined) q.body = f.body;
  if (f.header !== undefined) {
    q.header = typeof f.header === "string" ? f.header : `${f.header[0]}:${f.header[1]}`;
  }
  if (f.from !== undefined) q.from = f.from;
  if (f.since !== undefined) q.since = seconds(f.since);
  return q;
}

type QueryValues = Record<string, string | number | undefined>;

/**
 * Fault rules (spec §13.2), which make burner's SMTP fail on purpose so
 * that a test can try its application's failure paths. The server needs
 * `faults.enabled = true`; else every call throws `BurnerError` 404.
 */
export class Faults {
  readonly #burner: Burner;
  constructor(burner: Burner) {
    this.#burner = burner;
  }

  /** Arms a rule, for inboxes inside the key's scope, and returns it with its id. */
  async arm(rule: FaultRuleInput): Promise<FaultRule> {
    const body: Record<string, unknown> = { ...rule };
    if (typeof rule.delay === "number") body.delay = `${rule.delay}s`;
    return this.#burner.request<FaultRule>("POST", "/faults", body);
  }

  /** The rules inside the key's scope, spent ones too, in creation order. */
  async list(): Promise<FaultRule[]> {
    return this.#burner.request<FaultRule[]>("GET", "/faults");
  }

  /** Disarms a rule (its id, or the rule). A rule gone already throws BurnerError 404. */
  async disarm(rule: string | FaultRule): Promise<void> {
    const id = typeof rule === "string" ? rule : rule.id;
    await this.#burner.request("DELETE", `/faults/${encodeURIComponent(id)}`);
  }
}

/** A client of one burner server. */
export class Burner {
  readonly url: string;
  /** Fault rules: `faults.arm({...})`, `faults.list()`, `faults.disarm(id)`. */
  readonly faults: Faults;
  readonly #key: string;
  readonly #timeout: number;
  readonly #maxWait: number;

  constructor(options: BurnerOptions) {
    if (!options?.url) throw new TypeError("burner: url is required");
    if (!options.key) throw new TypeError("burner: key is required");
    this.url = options.url.replace(/\/+$/, "").replace(/\/api\/v1$/, "");
    // Checked here rather than at each fetch, where the event stream would
    // take a bad URL for a network it should wait out.
    if (!/^https?:\/\/[^/]/.test(this.url) || !tryURL(this.url)) {
      throw new TypeError(`burner: url must be http:// or https://, not ${JSON.stringify(options.url)}`);
    }
    this.#key = options.key;
    this.#timeout = options.requestTimeout ?? 30;
    const mw = options.maxWait ?? maxWait;
    if (!Number.isInteger(mw) || mw < 1 || mw > maxWait) {
      throw new TypeError(`burner: maxWait is an integer from 1 to 60, not ${mw}`);
    }
    this.#maxWait = mw;
    this.faults = new Faults(this);
  }

  /** A fresh address at `domain`; see the function `newAddress`. */
  newAddress(domain: string, prefix?: string): string {
    return newAddress(domain, prefix);
  }

  /**
   * The server's domains, limits and features, and what the client's key
   * may reach and do (`GET /api/v1/info`).
   */
  async info(): Promise<Info> {
    return this.#json<Info>("/info");
  }

  /** The emails of an inbox that pass the filters, newest first (at most `limit`, 10 by default). */
  async listEmails(options: ListOptions): Promise<Email[]> {
    const q = filterQuery(options.to, options);
    if (options.before !== undefined) q.before = seconds(options.before);
    if (options.limit !== undefined) q.limit = options.limit;
    return this.#json<Email[]>("/emails", q);
  }

  /**
   * The newest email of an inbox that passes the filters, waiting for one
   * to arrive when there is none yet: the API holds the request (`wait`,
   * up to `maxWait` seconds at a time) until a delivery wakes it, and this
   * asks again until `timeout` seconds (30 by default) have passed. Throws
   * `TimeoutError` when nothing came. Give `since` to skip mail that is
   * already there.
   */
  async waitForEmail(options: WaitOptions): Promise<Email> {
    const timeout = options.timeout ?? 30;
    const deadline = Date.now() + timeout * 1000;
    const q: ListQuery = { ...filterQuery(options.to, options), limit: 1 };
    for (;;) {
      const left = (deadline - Date.now()) / 1000;
      // The API's wait is whole seconds from 1 to 60; a last fraction of a
      // second is rounded up rather than dropped.
      q.wait = Math.min(this.#maxWait, Math.max(1, Math.ceil(left)));
      const res = await this.#request("GET", "/emails", q, {
        timeout: q.wait + waitSlack,
        signal: options.signal,
      });
      const emails = JSON.parse(new TextDecoder().decode(res.body)) as Email[];
      if (emails.length > 0) return emails[0];
      if (Date.now() >= deadline) {
        throw new TimeoutError(
          `burner: no email for ${q.to}${describe(q)} within ${timeout} s`,
        );
      }
    }
  }

  /** One email by id. */
  async getEmail(id: string): Promise<Email> {
    return this.#json<Email>(emailPath(id));
  }

  /** The message exactly as received over SMTP (with burner's `Received:` header), as UTF-8 text. */
  async raw(id: string): Promise<string> {
    return this.#text(emailPath(id, "raw"));
  }

  /** The text/plain part, else the visible text of the HTML part; "" when there is neither. */
  async text(id: string): Promise<string> {
    return this.#text(emailPath(id, "text"));
  }

  /** The link targets of the body, in order. */
  async links(id: string): Promise<string[]> {
    return this.#json<string[]>(emailPath(id, "links"));
  }

  /**
   * The one-time codes of the email, those after a keyword ("code",
   * "verification", …) first: take the first. `pattern`, an RE2 regular
   * expression, replaces burner's rule: each match, or its first group.
   */
  async codes(id: string, options: { pattern?: string } = {}): Promise<string[]> {
    const q = options.pattern ? { pattern: options.pattern } : undefined;
    return this.#json<string[]>(emailPath(id, "codes"), q);
  }

  /**
   * What burner's MX saw of the message: the client's address, HELO and
   * PTR, TLS, MAIL FROM, and its SPF, DKIM and DMARC verdicts, computed
   * within seconds of its arrival. With `wait` (whole seconds, 1 to 60)
   * the server holds the answer until the verdicts are in (`status`
   * "done") or that time has passed; without it, a fresh message may
   * still be "pending".
   *
   *     const a = await burner.auth(mail.id, 10);
   *     assert.equal(a.dmarc?.result, "pass");
   */
  async auth(id: string, wait?: number): Promise<Auth> {
    if (wait === undefined) return this.#json<Auth>(emailPath(id, "auth"));
    if (!Number.isInteger(wait) || wait < 1 || wait > maxWait) {
      throw new TypeError(`burner: wait is an integer from 1 to 60, not ${wait}`);
    }
    // Whole seconds up to maxWait a request, as waitForEmail asks.
    const deadline = Date.now() + wait * 1000;
    for (;;) {
      const w = Math.min(this.#maxWait, Math.max(1, Math.ceil((deadline - Date.now()) / 1000)));
      const res = await this.#request("GET", emailPath(id, "auth"), { wait: w }, { timeout: w + waitSlack });
      const a = JSON.parse(new TextDecoder().decode(res.body)) as Auth;
      if (a.status !== "pending" || Date.now() >= deadline) return a;
    }
  }

  /** The files of the message, numbered from 0 (at most 1,000). */
  async attachments(id: string): Promise<Attachment[]> {
    return this.#json<Attachment[]>(emailPath(id, "attachments"));
  }

  /** The bytes of file `n` of the message. */
  async attachment(id: string, n: number): Promise<Uint8Array> {
    if (!Number.isInteger(n) || n < 0) {
      throw new TypeError(`burner: an attachment's index is an integer from 0, not ${n}`);
    }
    return (await this.#request("GET", `${emailPath(id, "attachments")}/${n}`)).body;
  }

  /** Deletes one email. */
  async deleteEmail(id: string): Promise<void> {
    await this.#request("DELETE", emailPath(id));
  }

  /** Deletes every email of an inbox. */
  async clearInbox(to: Inbox): Promise<void> {
    await this.#request("DELETE", "/inbox", { to: localPart(to) });
  }

  /**
   * The SMTP sessions whose RCPTs named an inbox, accepted or refused,
   * newest first: what burner answered the application, and why a mail
   * did not arrive. Without an inbox, every session (for a key that reads
   * every inbox).
   */
  async sessions(inbox?: Inbox, options: SessionsOptions = {}): Promise<Session[]> {
    const q: QueryValues = {};
    if (inbox !== undefined) q.to = localPart(inbox);
    if (options.limit !== undefined) q.limit = options.limit;
    if (options.since !== undefined) q.since = seconds(options.since);
    return this.#json<Session[]>("/sessions", q);
  }

  /**
   * Sends one request to the API (`path` under /api/v1) with a JSON body
   * when given, and returns the JSON answer (undefined for 204). For the
   * routes this class has no method for yet.
   */
  async request<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.#request(method, path, undefined, { body });
    if (res.body.length === 0) return undefined as T;
    return JSON.parse(new TextDecoder().decode(res.body)) as T;
  }

  /**
   * The emails that arrive in an inbox from now on, as they arrive (the
   * API's Server-Sent Events). When the connection drops, it reconnects
   * after the delay the server asked for, with `Last-Event-ID`, so that
   * nothing that arrived meanwhile is missed. It ends when `signal` aborts
   * or the loop breaks; an answer of the API other than 200 (a bad inbox,
   * a refused key) throws `BurnerError`.
   */
  async *events(options: EventsOptions): AsyncGenerator<Email, void, undefined> {
    const to = localPart(options.to);
    let lastId = options.lastEventId;
    let retry = 2000;
    const outer = options.signal;
    while (!outer?.aborted) {
      const ctl = new AbortController();
      const onAbort = () => ctl.abort(outer?.reason);
      outer?.addEventListener("abort", onAbort, { once: true });
      try {
        const headers: Record<string, string> = {
          Authorization: `Bearer ${this.#key}`,
          Accept: "text/event-stream",
        };
        if (lastId) headers["Last-Event-ID"] = lastId;
        let res: Response;
        try {
          res = await fetch(`${this.url}/api/v1/events?${encode({ to })}`, {
            headers,
            signal: ctl.signal,
          });
        } catch {
          if (outer?.aborted) return;
          // The server is unreachable for now: try again, as EventSource does.
          await sleep(retry, outer);
          continue;
        }
        if (res.status !== 200) {
          const e = await errorOf(res);
          if (res.status >= 500) {
            await sleep(retry, outer);
            continue;
          }
          throw e;
        }
        try {
          for await (const ev of parseSSE(res.body!)) {
            if (ev.retry !== undefined) retry = ev.retry;
            if (ev.id !== undefined) lastId = ev.id;
            if (ev.event === "email" && ev.data !== "") {
              yield JSON.parse(ev.data) as Email;
            }
          }
        } catch {
          if (outer?.aborted) return;
          // A dropped connection: reconnect below.
        }
        await sleep(retry, outer);
      } finally {
        outer?.removeEventListener("abort", onAbort);
        ctl.abort();
      }
    }
  }

  async #json<T>(path: string, query?: QueryValues): Promise<T> {
    const { body } = await this.#request("GET", path, query);
    return JSON.parse(new TextDecoder().decode(body)) as T;
  }

  async #text(path: string): Promise<string> {
    return new TextDecoder().decode((await this.#request("GET", path)).body);
  }

  // request sends one request and reads the whole answer within the
  // timeout: the API's answers are small, and a held wait ends by itself.
  async #request(
    method: string,
    path: string,
    query?: QueryValues,
    opts: { timeout?: number; signal?: AbortSignal; body?: unknown } = {},
  ): Promise<{ headers: Headers; body: Uint8Array }> {
    let url = `${this.url}/api/v1${path}`;
    if (query) url += `?${encode(query)}`;
    const timeout = opts.timeout ?? this.#timeout;
    const ctl = new AbortController();
    const timer = setTimeout(
      () => ctl.abort(new TimeoutError(`burner: ${method} ${path}: no answer within ${timeout} s`)),
      timeout * 1000,
    );
    const outer = opts.signal;
    const onAbort = () => ctl.abort(outer?.reason);
    if (outer?.aborted) onAbort();
    outer?.addEventListener("abort", onAbort, { once: true });
    try {
      const headers: Record<string, string> = { Authorization: `Bearer ${this.#key}` };
      let body: string | undefined;
      if (opts.body !== undefined) {
        headers["Content-Type"] = "application/json";
        body = JSON.stringify(opts.body);
      }
      const res = await fetch(url, { method, headers, body, signal: ctl.signal });
      if (!res.ok) throw await errorOf(res);
      return { headers: res.headers, body: new Uint8Array(await res.arrayBuffer()) };
    } catch (err) {
      // fetch rejects with a generic AbortError on some versions of Node:
      // the reason (a TimeoutError, the caller's) says more.
      if (ctl.signal.aborted && ctl.signal.reason !== undefined) throw ctl.signal.reason;
      throw err;
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener("abort", onAbort);
    }
  }
}

function tryURL(s: string): boolean {
  try {
    new URL(s);
    return true;
  } catch {
    return false;
  }
}

function emailPath(id: string, sub?: string): string {
  const p = `/emails/${encodeURIComponent(id)}`;
  return sub ? `${p}/${sub}` : p;
}

// encode writes a query string with encodeURIComponent: a space is %20
// and a "+" is %2B, which every parameter reads alike (the API takes a
// bare "+" in "to" as a "+", elsewhere as a space).
function encode(q: QueryValues): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(q)) {
    if (v !== undefined && v !== "") parts.push(`${k}=${encodeURIComponent(String(v))}`);
  }
  return parts.join("&");
}

function describe(q: ListQuery): string {
  const parts: string[] = [];
  for (const k of ["subject", "search", "body", "header", "from", "since"] as const) {
    if (q[k] !== undefined) parts.push(`${k}=${JSON.stringify(q[k])}`);
  }
  return parts.length ? ` matching ${parts.join(", ")}` : "";
}

async function errorOf(res: Response): Promise<BurnerError> {
  let message = res.statusText || `HTTP ${res.status}`;
  try {
    const text = await res.text();
    try {
      const body = JSON.parse(text) as { error?: unknown };
      if (typeof body.error === "string") message = body.error;
    } catch {
      if (text.trim()) message = text.trim();
    }
  } catch {
    // The body could not be read: the status line says enough.
  }
  return new BurnerError(res.status, message);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

interface SSEEvent {
  id?: string;
  event: string;
  data: string;
  retry?: number;
}

// parseSSE reads a text/event-stream as the HTML standard says: lines end
// in CRLF, LF or CR; a blank line dispatches the event; lines starting
// with ":" are comments (burner's keep-alives).
async function* parseSSE(body: ReadableStream<Uint8Array>): AsyncGenerator<SSEEvent> {
  const decoder = new TextDecoder();
  let buf = "";
  let ev: SSEEvent = { event: "message", data: "" };
  let hasData = false;
  const reader = body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += decoder.decode(value, { stream: true });
      for (;;) {
        const m = /\r\n|\n|\r/.exec(buf);
        // A CR at the very end may be the first half of a CRLF.
        if (!m || (m[0] === "\r" && m.index === buf.length - 1)) break;
        const line = buf.slice(0, m.index);
        buf = buf.slice(m.index + m[0].length);
        if (line === "") {
          if (hasData || ev.retry !== undefined || ev.id !== undefined) yield ev;
          ev = { event: "message", data: "" };
          hasData = false;
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        switch (field) {
          case "id":
            if (!value.includes("\0")) ev.id = value;
            break;
          case "event":
            ev.event = value;
            break;
          case "data":
            ev.data = hasData ? `${ev.data}\n${value}` : value;
            hasData = true;
            break;
          case "retry":
            if (/^\d+$/.test(value)) ev.retry = Number(value);
            break;
        }
      }
    }
  } finally {
    // Closes the connection when the reader stops early.
    reader.cancel().catch(() => {});
  }
}
