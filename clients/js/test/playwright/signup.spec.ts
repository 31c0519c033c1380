import { Burner, expect, test } from "burner-client/playwright";
import { sendMail } from "../support/burner.js";

// The application under test would send this mail; here the test does,
// over SMTP, to the address the fixture made.
async function signUp(address: string) {
  const [host, port] = process.env.BURNER_TEST_SMTP!.split(":");
  await sendMail({
    host,
    port: Number(port),
    to: address,
    subject: "Confirm your account",
    text: "Welcome!\nYour confirmation code is 734 019.\nhttps://app.test/confirm?t=xyz\n",
  });
}

const used: string[] = [];

test("signup: the code arrives in a fresh inbox", async ({ inbox, burner, request }) => {
  used.push(inbox.to);
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
  const b = new Burner({ url: process.env.BURNER_URL!, key: process.env.BURNER_KEY! });
  expect(used).toHaveLength(2);
  for (const to of used) expect(await b.listEmails({ to })).toEqual([]);
});
