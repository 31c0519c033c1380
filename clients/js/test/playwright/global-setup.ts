// Starts burner for the run and hands it to the fixtures the way a user
// would: BURNER_URL and BURNER_KEY.
import { startBurner } from "../support/burner.js";

export default async function globalSetup() {
  const srv = await startBurner();
  process.env.BURNER_URL = srv.url;
  process.env.BURNER_KEY = srv.key;
  process.env.BURNER_DOMAIN = "inbox.test";
  process.env.BURNER_TEST_SMTP = `${srv.smtpHost}:${srv.smtpPort}`;
  return () => srv.stop();
}
