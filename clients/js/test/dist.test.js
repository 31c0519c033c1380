// dist/ is committed, so that `npm install ./clients/js` and the release's
// npm package need no build (and no TypeScript) where they are installed.
// This fails when dist/ is not what `npm run build` makes of src/ today.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function files(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath ?? e.path, e.name)))
    .sort();
}

test("dist/ is what npm run build makes of src/", async () => {
  // A copy of the package, so that the source maps' relative paths are
  // the same as in the package itself.
  const dir = mkdtempSync(path.join(os.tmpdir(), "burner-js-dist-"));
  try {
    cpSync(path.join(pkg, "src"), path.join(dir, "src"), { recursive: true });
    // package.json too: its "type": "module" makes NodeNext emit ES modules.
    for (const f of ["tsconfig.json", "package.json"]) cpSync(path.join(pkg, f), path.join(dir, f));
    symlinkSync(path.join(pkg, "node_modules"), path.join(dir, "node_modules"));
    await promisify(execFile)(path.join(pkg, "node_modules", ".bin", "tsc"), ["-p", "tsconfig.json"], {
      cwd: dir,
      timeout: 120_000,
    });
    const fresh = path.join(dir, "dist");
    const committed = path.join(pkg, "dist");
    const want = files(fresh);
    assert.ok(want.includes("index.js"), "tsc wrote no dist/index.js");
    assert.deepEqual(files(committed), want, "dist/ has other files than the build: run `npm run build` in clients/js and commit dist/");
    for (const name of want) {
      assert.ok(
        readFileSync(path.join(committed, name), "utf8") === readFileSync(path.join(fresh, name), "utf8"),
        `dist/${name} differs from the build of src/: run \`npm run build\` in clients/js and commit dist/`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
