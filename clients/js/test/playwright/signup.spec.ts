// The fixtures with a key for every inbox, from BURNER_URL and BURNER_KEY.
// (A key's worker options are per file: scoped-readonly.spec.ts and
// one-inbox.spec.ts try the scoped keys.)
import { expect, test } from "burner-client/playwright";
import { admin, signUp } from "./helpers.js";

const used: string[] = [];

test("signup: the code arrives in a fresh inbox", async ({ inbox, burner, burnerInfo, request }) => {
  used.push(inbox.to);
  expect(burnerInfo.key).toEqual({ name: "test", inboxes: ["*"], readOnly: false });
  // No BURNER_DOMAIN: the server's addressDomain, its first domain.
  expect(burnerInfo.addressDomain).toBe("inbox.test");
  expect(inbox.address).toMatch(/^pw-[a-z0-9]{12}@inbox\.test$/);
  expect(await inbox.listEmails()).toEqual([]);

  const waiting = inbox.waitForEmail({ subject: "Confirm", timeout: 30 });
  await signUp(inbox.address);
  const mail = await waiting;
  expect(mail.toAddress).toBe(inbox.address);
  expect(await inbox.codes(mail.id)).toEqual(["734019"]);
  expect(await inbox.links(mail.id)).toEqual(["https://app.test/confirm?t=xyz"]);

  // The same email through Playwright's request API, as a page would see it.
  const res = await request.get(`${burner.url}/api/v1/emails/${mail.id}`, {
    headers: { Authorization: `Bearer ${process.env.BURNER_KEY}` },
  });
  expect(res.status()).toBe(200);
  expect((await res.json()).subject).toBe("Confirm your account");
});

test("a second test gets another inbox", async ({ inbox }) => {
  used.push(inbox.to);
  expect(used[1]).not.toBe(used[0]);
  await signUp(inbox.address);
  await inbox.waitForEmail();
});

test.afterAll(async () => {
  // The fixture cleared each inbox after its test.
  expect(used).toHaveLength(2);
  for (const to of used) expect(await admin().listEmails({ to })).toEqual([]);
});
