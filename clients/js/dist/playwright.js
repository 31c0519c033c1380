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
export { expect };
export * from "./index.js";
function configured(c) {
    const env = process.env;
    const url = c.url ?? env.BURNER_URL;
    const key = c.key ?? env.BURNER_KEY;
    if (!url || !key) {
        throw new Error("burner-client/playwright: set BURNER_URL and BURNER_KEY (or test.use({ burnerConfig: { url, key } }))");
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
async function infoOf(burner) {
    try {
        return await burner.info();
    }
    catch (err) {
        if (!(err instanceof BurnerError) || err.status !== 404)
            throw err;
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
export const test = base.extend({
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
        if (!burnerInfo.key.readOnly)
            await burner.clearInbox(to);
    },
    faults: async ({ burner, inbox }, use) => {
        const armed = [];
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
            }
            catch (err) {
                // Deleted by the test itself: nothing left to do.
                if (!(err instanceof BurnerError) || err.status !== 404)
                    throw err;
            }
        }
    },
});
//# sourceMappingURL=playwright.js.map