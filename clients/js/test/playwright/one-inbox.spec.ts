// The fixtures with a key for one inbox (a pattern without "*"): every
// test gets that inbox, cleared after it.
import { expect, test } from "burner-client/playwright";
import { admin, signUp } from "./helpers.js";

test.use({ burnerConfig: { key: process.env.BURNER_TEST_KEY_EXACT, prefix: "ignored-" } });

test("the inbox is the key's one inbox", async ({ inbox }) => {
  expect(inbox.address).toBe("alice@inbox.test");
  await signUp(inbox.address);
  await inbox.waitForEmail({ subject: "Confirm", timeout: 30 });
});

test.afterAll(async () => {
  expect(await admin().listEmails({ to: "alice" })).toEqual([]);
});
