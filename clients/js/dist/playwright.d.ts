import { expect } from "@playwright/test";
import { Burner } from "./index.js";
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
    waitForEmail(options?: Filters & {
        timeout?: number;
        signal?: AbortSignal;
    }): Promise<Email>;
    /** See Burner.listEmails. */
    listEmails(options?: Omit<ListOptions, "to">): Promise<Email[]>;
    /** See Burner.codes. */
    codes(id: string, options?: {
        pattern?: string;
    }): Promise<string[]>;
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
    arm(rule: Omit<FaultRuleInput, "inbox"> & {
        inbox?: string;
    }): Promise<FaultRule>;
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
/** Playwright's `test`, with the fixtures `burner`, `inbox` and `burnerInfo`. */
export declare const test: import("@playwright/test").TestType<import("@playwright/test").PlaywrightTestArgs & import("@playwright/test").PlaywrightTestOptions & BurnerFixtures, import("@playwright/test").PlaywrightWorkerArgs & import("@playwright/test").PlaywrightWorkerOptions & BurnerWorkerFixtures>;
