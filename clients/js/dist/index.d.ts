import type { components } from "./openapi.js";
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
export declare class BurnerError extends Error {
    readonly status: number;
    constructor(status: number, message: string);
}
/** Nothing matching arrived within the time a wait was given. */
export declare class TimeoutError extends Error {
    constructor(message: string);
}
/** The local part of an inbox given as a local part or as an address. */
export declare function localPart(inbox: Inbox): string;
/**
 * A fresh address at `domain`: `prefix` (when given) and 12 random
 * lower-case letters and digits (62 bits), a local part the API accepts.
 */
export declare function newAddress(domain: string, prefix?: string): string;
/**
 * A fresh address that the key `info` describes may use, as the fixtures
 * make them: inside the key's first pattern (`prefix` follows the part
 * before its `*`, unless it starts with it already; a pattern without `*`
 * names the one inbox the address is then on), at `domain`, else at the
 * server's `addressDomain`, else at `burner.test`.
 */
export declare function scopedAddress(info: Info, options?: {
    domain?: string;
    prefix?: string;
}): string;
/**
 * Fault rules (spec §13.2), which make burner's SMTP fail on purpose so
 * that a test can try its application's failure paths. The server needs
 * `faults.enabled = true`; else every call throws `BurnerError` 404.
 */
export declare class Faults {
    #private;
    constructor(burner: Burner);
    /** Arms a rule, for inboxes inside the key's scope, and returns it with its id. */
    arm(rule: FaultRuleInput): Promise<FaultRule>;
    /** The rules inside the key's scope, spent ones too, in creation order. */
    list(): Promise<FaultRule[]>;
    /** Disarms a rule (its id, or the rule). A rule gone already throws BurnerError 404. */
    disarm(rule: string | FaultRule): Promise<void>;
}
/** A client of one burner server. */
export declare class Burner {
    #private;
    readonly url: string;
    /** Fault rules: `faults.arm({...})`, `faults.list()`, `faults.disarm(id)`. */
    readonly faults: Faults;
    constructor(options: BurnerOptions);
    /** A fresh address at `domain`; see the function `newAddress`. */
    newAddress(domain: string, prefix?: string): string;
    /**
     * The server's domains, limits and features, and what the client's key
     * may reach and do (`GET /api/v1/info`).
     */
    info(): Promise<Info>;
    /** The emails of an inbox that pass the filters, newest first (at most `limit`, 10 by default). */
    listEmails(options: ListOptions): Promise<Email[]>;
    /**
     * The newest email of an inbox that passes the filters, waiting for one
     * to arrive when there is none yet: the API holds the request (`wait`,
     * up to `maxWait` seconds at a time) until a delivery wakes it, and this
     * asks again until `timeout` seconds (30 by default) have passed. Throws
     * `TimeoutError` when nothing came. Give `since` to skip mail that is
     * already there.
     */
    waitForEmail(options: WaitOptions): Promise<Email>;
    /** One email by id. */
    getEmail(id: string): Promise<Email>;
    /** The message exactly as received over SMTP (with burner's `Received:` header), as UTF-8 text. */
    raw(id: string): Promise<string>;
    /** The text/plain part, else the visible text of the HTML part; "" when there is neither. */
    text(id: string): Promise<string>;
    /** The link targets of the body, in order. */
    links(id: string): Promise<string[]>;
    /**
     * The one-time codes of the email, those after a keyword ("code",
     * "verification", …) first: take the first. `pattern`, an RE2 regular
     * expression, replaces burner's rule: each match, or its first group.
     */
    codes(id: string, options?: {
        pattern?: string;
    }): Promise<string[]>;
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
    auth(id: string, wait?: number): Promise<Auth>;
    /** The files of the message, numbered from 0 (at most 1,000). */
    attachments(id: string): Promise<Attachment[]>;
    /** The bytes of file `n` of the message. */
    attachment(id: string, n: number): Promise<Uint8Array>;
    /** Deletes one email. */
    deleteEmail(id: string): Promise<void>;
    /** Deletes every email of an inbox. */
    clearInbox(to: Inbox): Promise<void>;
    /**
     * The SMTP sessions whose RCPTs named an inbox, accepted or refused,
     * newest first: what burner answered the application, and why a mail
     * did not arrive. Without an inbox, every session (for a key that reads
     * every inbox).
     */
    sessions(inbox?: Inbox, options?: SessionsOptions): Promise<Session[]>;
    /**
     * Sends one request to the API (`path` under /api/v1) with a JSON body
     * when given, and returns the JSON answer (undefined for 204). For the
     * routes this class has no method for yet.
     */
    request<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
    /**
     * The emails that arrive in an inbox from now on, as they arrive (the
     * API's Server-Sent Events). When the connection drops, it reconnects
     * after the delay the server asked for, with `Last-Event-ID`, so that
     * nothing that arrived meanwhile is missed. It ends when `signal` aborts
     * or the loop breaks; an answer of the API other than 200 (a bad inbox,
     * a refused key) throws `BurnerError`.
     */
    events(options: EventsOptions): AsyncGenerator<Email, void, undefined>;
}
