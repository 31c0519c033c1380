// A Playwright fixture: each test gets a fresh inbox, cleared after it.
//
//   import { test, expect } from "burner-client/playwright";
//   test("signup", async ({ page, inbox }) => {
//     await page.getByLabel("Email").fill(inbox.address);
//     const mail = await inbox.waitForEmail({ subject: "Confirm" });
//     expect(await inbox.codes(mail.id)).not.toEqual([]);
//   });
//
// And fault rules for one test, disarmed after it (spec §13.2: the server
// needs faults.enabled = true):
//
//   test("retries a 451", async ({ page, inbox, faults }) => {
//     await faults.arm({ stage: "rcpt", reply: "451 4.3.0 Try again later", times: 3 });
//     ... the application sends to inbox.address ...
//     expect((await inbox.sessions()).map((s) => s.outcome)).toEqual(["delivered", "faulted", "faulted", "faulted"]);
//   });
//
// The server comes from BURNER_URL and BURNER_KEY, the inbox domain from
// BURNER_DOMAIN (else the server's), the start of each inbox from
// BURNER_PREFIX, or all from the option `burnerConfig`
// (test.use({ burnerConfig: {...} })). Any key will do: the fixtures ask
// the server (GET /api/v1/info) which inboxes the key reaches, and do not
// clean up after a read-only key.

import { test as base, expect } from "@playwright/test";
import { Burner, BurnerError, localPart, scopedAddress } from "./index.js";
import type { Email, FaultRule, FaultRuleInput, Filters, Info, ListOptions, Session, SessionsOptions } from "./index.js";

export { expect };
export * from "./index.js";

/** Where the fixtures find burner; each field defaults to its environment variable. */
export interface BurnerConfig {
  /** BURNER_URL: the server's base URL. */
  url?: string;
  /** BURNER_KEY: an API key. */
  key?: string;
  /** BURNER_DOMAIN: the domain of the inbox addresses; the server's `addressDomain` when not set. */
  domain?: string;
  /**
   * BURNER_PREFIX: the start of each inbox's local part, after the part of
   * the key's first pattern before its `*`; "pw-" when not set.
   */
  prefix?: string;
}

/** A fresh inbox for one test: its address, and the client's calls bound to it. */
export interface TestInbox {
  /** The whole address to give the application under test. */
  readonly address: string;
  /** Its local part, the API's `to`. */
  readonly to: string;
  /** See Burner.waitForEmail. */
  waitForEmail(options?: Filters & { timeout?: number; signal?: AbortSignal }): Promise<Email>;
  /** See Burner.listEmails. */
  listEmails(options?: Omit<ListOptions, "to">): Promise<Email[]>;
  /** See Burner.codes. */
  codes(id: string, options?: { pattern?: string }): Promise<string[]>;
  /** See Burner.links. */
  links(id: string): Promise<string[]>;
  /** Deletes every email of the inbox (refused for a read-only key). */
  clear(): Promise<void>;
  /** See Burner.sessions: the SMTP sessions that named this inbox, newest first. */
  sessions(options?: SessionsOptions): Promise<Session[]>;
}

/** Fault rules armed for one test, disarmed after it. */
export interface TestFaults {
  /**
   * Arms a rule (see Burner.faults.arm) for the test's inbox, unless
   * `inbox` names another pattern; it is disarmed when the test ends.
   */
  arm(rule: Omit<FaultRuleInput, "inbox"> & { inbox?: string }): Promise<FaultRule>;
}

export interface BurnerFixtures {
  /** A client of the server. */
  burner: Burner;
  /**
   * A fresh address inside the key's scope; its mail is deleted after the
   * test, unless the key is read-only.
   */
  inbox: TestInbox;
  /** Fault rules for this test's inbox, disarmed after the test (the server needs faults.enabled). */
  faults: TestFaults;
}

export interface BurnerWorkerOptions {
  burnerConfig: BurnerConfig;
}

export interface BurnerWorkerFixtures extends BurnerWorkerOptions {
  /** What the server says of itself and of the key (GET /api/v1/info), asked once per worker. */
  burnerInfo: Info;
}

interface Configured {
  url: string;
  key: string;
  domain: string | undefined;
  prefix: string;
}

function configured(c: BurnerConfig): Configured {
  const env = process.env;
  const url = c.url ?? env.BURNER_URL;
  const key = c.key ?? env.BURNER_KEY;
  if (!url || !key) {
    throw new Error(
      "burner-client/playwright: set BURNER_URL and BURNER_KEY (or test.use({ burnerConfig: { url, key } }))",
    );
  }
  return {
    url,
    key,
    domain: c.domain || env.BURNER_DOMAIN || undefined,
    prefix: c.prefix ?? env.BURNER_PREFIX ?? "pw-",
  };
}

// infoOf asks the server about the key. A burner older than GET
// /api/v1/info answers 404: its keys were taken to reach every inbox.
async function infoOf(burner: Burner): Promise<Info> {
  try {
    return await burner.info();
  } catch (err) {
    if (!(err instanceof BurnerError) || err.status !== 404) throw err;
    return {
      version: "",
      domains: [],
      addressDomain: "",
      key: { name: "", inboxes: ["*"], readOnly: false },
      limits: { maxMessageBytes: 0, maxRecipients: 0, maxListLimit: 10 },
      features: { auth: false, faults: false, mcp: false, webhooks: false },
    };
  }
}

/** Playwright's `test`, with the fixtures `burner`, `inbox` and `burnerInfo`. */
export const test = base.extend<BurnerFixtures, BurnerWorkerFixtures>({
  burnerConfig: [{}, { scope: "worker", option: true }],
  burnerInfo: [
    async ({ burnerConfig }, use) => {
      const c = configured(burnerConfig);
      await use(await infoOf(new Burner({ url: c.url, key: c.key })));
    },
    { scope: "worker" },
  ],
  burner: async ({ burnerConfig }, use) => {
    const c = configured(burnerConfig);
    await use(new Burner({ url: c.url, key: c.key }));
  },
  inbox: async ({ burner, burnerConfig, burnerInfo }, use) => {
    const c = configured(burnerConfig);
    const address = scopedAddress(burnerInfo, { domain: c.domain, prefix: c.prefix });
    const to = localPart(address);
    await use({
      address,
      to,
      waitForEmail: (o = {}) => burner.waitForEmail({ ...o, to }),
      listEmails: (o = {}) => burner.listEmails({ ...o, to }),
      codes: (id, o) => burner.codes(id, o),
      links: (id) => burner.links(id),
      clear: () => burner.clearInbox(to),
      sessions: (o) => burner.sessions(to, o),
    });
    // A read-only key may not delete: its mail stays until retention.
    if (!burnerInfo.key.readOnly) await burner.clearInbox(to);
  },
  faults: async ({ burner, inbox }, use) => {
    const armed: string[] = [];
    await use({
      arm: async (rule) => {
        const r = await burner.faults.arm({ ...rule, inbox: rule.inbox ?? inbox.to });
        armed.push(r.id);
        return r;
      },
    });
    for (const id of armed) {
      try {
        await burner.faults.disarm(id);
      } catch (err) {
        // Deleted by the test itself: nothing left to do.
        if (!(err instanceof BurnerError) || err.status !== 404) throw err;
      }
    }
  },
});
