// What the fixture tests share.
import { Burner } from "burner-client";
import { sendMail } from "../support/burner.js";

// The application under test would send this mail; here the test does,
// over SMTP, to the address the fixture made.
export async function signUp(address: string) {
  const [host, port] = process.env.BURNER_TEST_SMTP!.split(":");
  await sendMail({
    host,
    port: Number(port),
    to: address,
    subject: "Confirm your account",
    text: "Welcome!\nYour confirmation code is 734 019.\nhttps://app.test/confirm?t=xyz\n",
  });
}

// A client with the key that reaches every inbox, to see what the
// fixtures left behind.
export function admin() {
  return new Burner({ url: process.env.BURNER_URL!, key: process.env.BURNER_KEY! });
}
