// The fixture's own test: no browser (none can be downloaded here), only
// the fixtures and Playwright's request API, against a real burner that
// globalSetup starts.
import { defineConfig } from "@playwright/test";

export default defineConfig({
  testDir: "test/playwright",
  globalSetup: "./test/playwright/global-setup.ts",
  workers: 1,
  timeout: 60_000,
  reporter: "list",
  forbidOnly: !!process.env.CI,
});
