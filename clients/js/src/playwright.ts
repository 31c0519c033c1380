// A Playwright fixture: each test gets a fresh inbox, cleared after it.
//
//   import { test, expect } from "burner-client/playwright";
//   test("signup", async ({ page, inbox }) => {
//     await page.getByLabel("Email").fill(inbox.address);
//     const mail = await inbox.waitForEmail({ subject: "Confirm" });
//     expect(await inbox.codes(mail.id)).not.toEqual([]);
//   });
//
// The server comes from BURNER_URL and BURNER_KEY, the inbox domain from
// BURNER_DOMAIN, or from the option `burner` (test.use({ burner: {...} })).

import { test as base, expect } from "@playwright/test";
import { Burner, localPart, newAddress } from "./index.js";
import type { Email, Filters, ListOptions } from "./index.js";

export { expect };
export * from "./index.js";

/** Where the fixtures find burner; each field defaults to its environment variable. */
export interface BurnerConfig {
  /** BURNER_URL: the server's base URL. */
  url?: string;
  /** BURNER_KEY: an API key. */
  key?: string;
  /** BURNER_DOMAIN: the domain of the inbox addresses; "burner.test" when not set. */
  domain?: string;
  /** BURNER_PREFIX: the start of each inbox's local part; "pw-" when not set. */
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
  /** Deletes every email of the inbox. */
  clear(): Promise<void>;
}

export interface BurnerFixtures {
  /** A client of the server. */
  burner: Burner;
  /** A fresh address, its mail deleted after the test. */
  inbox: TestInbox;
}

export interface BurnerWorkerOptions {
  burnerConfig: BurnerConfig;
}

function configured(c: BurnerConfig): Required<BurnerConfig> {
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
    domain: c.domain ?? env.BURNER_DOMAIN ?? "burner.test",
    prefix: c.prefix ?? env.BURNER_PREFIX ?? "pw-",
  };
}

/** Playwright's `test`, with the fixtures `burner` and `inbox`. */
export const test = base.extend<BurnerFixtures, BurnerWorkerOptions>({
  burnerConfig: [{}, { scope: "worker", option: true }],
  burner: async ({ burnerConfig }, use) => {
    const c = configured(burnerConfig);
    await use(new Burner({ url: c.url, key: c.key }));
  },
  inbox: async ({ burner, burnerConfig }, use) => {
    const c = configured(burnerConfig);
    const address = newAddress(c.domain, c.prefix);
    const to = localPart(address);
    await use({
      address,
      to,
      waitForEmail: (o = {}) => burner.waitForEmail({ ...o, to }),
      listEmails: (o = {}) => burner.listEmails({ ...o, to }),
      codes: (id, o) => burner.codes(id, o),
      links: (id) => burner.links(id),
      clear: () => burner.clearInbox(to),
    });
    await burner.clearInbox(to);
  },
});
