// Starts burner for the run and hands it to the fixtures the way a user
// would: BURNER_URL and BURNER_KEY. No BURNER_DOMAIN: the fixtures take
// the server's addressDomain (its first inbox domain, inbox.test).
import { startBurner } from "../support/burner.js";

export default async function globalSetup() {
  const srv = await startBurner();
  process.env.BURNER_URL = srv.url;
  process.env.BURNER_KEY = srv.key;
  delete process.env.BURNER_DOMAIN;
  delete process.env.BURNER_PREFIX;
  // The scoped keys, for the tests that use them through burnerConfig.
  process.env.BURNER_TEST_KEY_SCOPED_RO = srv.keys["scoped-ro"];
  process.env.BURNER_TEST_KEY_EXACT = srv.keys.exact;
  process.env.BURNER_TEST_SMTP = `${srv.smtpHost}:${srv.smtpPort}`;
  return () => srv.stop();
}
