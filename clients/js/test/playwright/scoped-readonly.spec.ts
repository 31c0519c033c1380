// The fixtures with a scoped, read-only key, as docs/mcp.md and the
// READMEs recommend: the inbox is inside the key's first pattern, and the
// teardown deletes nothing (a read-only key's DELETE is a 403).
import { expect, test } from "burner-client/playwright";
import { admin, signUp } from "./helpers.js";

test.use({ burnerConfig: { key: process.env.BURNER_TEST_KEY_SCOPED_RO, domain: "other.test" } });

const used: string[] = [];

test("the inbox is inside the key's first pattern", async ({ inbox, burnerInfo }) => {
  used.push(inbox.to);
  expect(burnerInfo.key).toEqual({ name: "scoped-ro", inboxes: ["team-*"], readOnly: true });
  // The pattern's prefix, then the fixture's; the domain configured.
  expect(inbox.address).toMatch(/^team-pw-[a-z0-9]{12}@other\.test$/);
  await signUp(inbox.address);
  const mail = await inbox.waitForEmail({ subject: "Confirm", timeout: 30 });
  expect(await inbox.codes(mail.id)).toEqual(["734019"]);
});

test.afterAll(async () => {
  // The mail stays: the fixture did not try to clear the inbox.
  expect(used).toHaveLength(1);
  expect(await admin().listEmails({ to: used[0] })).toHaveLength(1);
});
