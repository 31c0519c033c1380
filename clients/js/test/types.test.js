// The types in src/openapi.ts are generated from server/openapi.json
// (npm run generate); this fails when the two have drifted apart, so that
// a change of the API reaches the client's types in the same commit.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

test("src/openapi.ts is what openapi-typescript makes of server/openapi.json", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "burner-js-types-"));
  try {
    const out = path.join(dir, "openapi.ts");
    await promisify(execFile)(
      path.join(pkg, "node_modules", ".bin", "openapi-typescript"),
      [path.join(pkg, "..", "..", "server", "openapi.json"), "-o", out],
      { cwd: pkg, timeout: 120_000 },
    );
    const fresh = readFileSync(out, "utf8");
    const committed = readFileSync(path.join(pkg, "src", "openapi.ts"), "utf8");
    assert.ok(fresh.includes("export interface paths"), "the generator wrote no types");
    assert.ok(
      fresh === committed,
      "src/openapi.ts differs from server/openapi.json: run `npm run generate` in clients/js and commit the result",
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
