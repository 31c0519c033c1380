// The faults fixture: a rule armed for the test's inbox, disarmed after
// the test; and the inbox's session log, which says what happened.
import { expect, test } from "burner-client/playwright";
import { admin, signUp } from "./helpers.js";

const armed: string[] = [];

test("a 451, then the retry is taken", async ({ inbox, faults }) => {
  const rule = await faults.arm({ stage: "rcpt", reply: "451 4.3.0 Try again later", times: 1 });
  armed.push(rule.id);
  expect(rule.inbox).toBe(inbox.to);
  await expect(signUp(inbox.address)).rejects.toThrow(/got 451 4\.3\.0 Try again later/);
  await signUp(inbox.address);
  await inbox.waitForEmail({ subject: "Confirm", timeout: 30 });
  await expect
    .poll(async () => (await inbox.sessions()).map((s) => s.outcome), { timeout: 10_000 })
    .toEqual(["delivered", "faulted"]);
});

test.afterAll(async () => {
  // The fixture disarmed the rule after its test.
  expect(armed).toHaveLength(1);
  expect((await admin().faults.list()).map((r) => r.id)).not.toContain(armed[0]);
});
