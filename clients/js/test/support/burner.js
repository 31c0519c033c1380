// A real burner for the tests: built from this checkout, started on
// 127.0.0.1 with ports the kernel picks and a data file in a temporary
// directory, and a plain SMTP client to send it mail.

import { spawn, execFile } from "node:child_process";
import dgram from "node:dgram";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const repo = path.resolve(pkg, "../..");

/**
 * Builds burner (`go build`; BURNER_BIN names a binary to use instead),
 * makes API keys, starts `burner serve` for the inbox domains inbox.test
 * and other.test with fault rules on, and returns how to reach it. `key` reaches every inbox;
 * `keys` holds it and the scoped ones: "scoped-ro" (`team-*`, read-only)
 * and "exact" (the inbox `alice`). Call stop() when done: it ends the
 * server and removes its files.
 */
export async function startBurner() {
  const dir = mkdtempSync(path.join(os.tmpdir(), "burner-js-test-"));
  let bin = process.env.BURNER_BIN;
  if (!bin) {
    // One place per checkout, so that a second build (the Playwright run
    // after node --test) finds the binary up to date and takes seconds.
    bin = path.join(pkg, "node_modules", ".cache", "burner-test", "burner");
    await run("go", ["build", "-o", bin, "."], { cwd: repo, timeout: 600_000 });
  }
  const data = path.join(dir, "burner.db");
  const keys = {};
  for (const [name, ...scope] of [
    ["test"],
    ["scoped-ro", "--inbox", "team-*", "--read-only"],
    ["exact", "--inbox", "alice"],
  ]) {
    // keys create prints the key alone on the last line of stdout (spec §1).
    const { stdout } = await run(bin, ["keys", "create", "--name", name, ...scope, "--data", data], {
      cwd: dir,
      timeout: 60_000,
    });
    keys[name] = stdout.trim().split("\n").pop();
  }
  const key = keys.test;

  const args = ["serve", "--data", data, "--http", "127.0.0.1:0", "--smtp", "127.0.0.1:0"];
  const child = spawn(bin, [...args, "--domain", "inbox.test", "--domain", "other.test"], {
    cwd: dir, // no ./burner.toml there: built-in defaults
    stdio: ["ignore", "ignore", "pipe"],
    // Fault rules on (spec §13.2), as a test environment has them. The
    // verifications of spec §12 ask a loopback port where nothing listens:
    // no lookup leaves the machine, and each is temperror at once.
    env: { ...process.env, BURNER_FAULTS_ENABLED: "true", BURNER_DNS_RESOLVER: await closedPort() },
  });
  let log = "";
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const started = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`burner did not start within 60 s:\n${log}`)), 60_000);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      log += chunk;
      // burner logs its bound addresses once it serves.
      const m = /msg="burner started".* smtp=(\S+) .*http=(\S+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve({ smtp: m[1], http: m[2] });
      }
    });
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`burner exited (${code}) before serving:\n${log}`));
    });
  }).catch(async (err) => {
    child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
    throw err;
  });

  const [smtpHost, smtpPort] = splitHostPort(started.smtp);
  return {
    url: `http://${started.http}`,
    key,
    keys,
    smtpHost,
    smtpPort,
    log: () => log,
    /** Sends one message over SMTP; see sendMail. */
    send: (msg) => sendMail({ host: smtpHost, port: smtpPort, ...msg }),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// closedPort returns a loopback UDP address nothing listens on.
async function closedPort() {
  const sock = dgram.createSocket("udp4");
  await new Promise((resolve) => sock.bind(0, "127.0.0.1", resolve));
  const { port } = sock.address();
  await new Promise((resolve) => sock.close(resolve));
  return `127.0.0.1:${port}`;
}

function splitHostPort(hp) {
  const i = hp.lastIndexOf(":");
  return [hp.slice(0, i), Number(hp.slice(i + 1))];
}

/**
 * Sends one message to `to` (an address) over SMTP: EHLO, MAIL, RCPT,
 * DATA, QUIT, each reply checked. `headers` are extra header fields.
 */
export async function sendMail({ host, port, from = "sender@example.test", to, subject, text, headers = {} }) {
  const sock = net.connect({ host, port });
  sock.setEncoding("utf8");
  sock.setTimeout(30_000, () => sock.destroy(new Error("SMTP: no reply within 30 s")));
  let buf = "";
  const waiters = [];
  let failure = null;
  sock.on("data", (d) => {
    buf += d;
    flush();
  });
  sock.on("error", (err) => {
    failure = err;
    for (const w of waiters.splice(0)) w.reject(err);
  });
  // A reply is complete at a line "NNN text" (not "NNN-text").
  function flush() {
    for (;;) {
      const m = /^(?:\d{3}-[^\n]*\n)*(\d{3})(?: [^\n]*)?\r?\n/.exec(buf);
      if (!m || waiters.length === 0) return;
      buf = buf.slice(m[0].length);
      waiters.shift().resolve({ code: Number(m[1]), text: m[0] });
    }
  }
  function reply() {
    return new Promise((resolve, reject) => {
      if (failure) return reject(failure);
      waiters.push({ resolve, reject });
      flush();
    });
  }
  async function expectReply(code, what) {
    const r = await reply();
    if (r.code !== code) throw new Error(`SMTP ${what}: want ${code}, got ${r.text.trim()}`);
    return r;
  }
  async function command(line, code) {
    sock.write(`${line}\r\n`);
    return expectReply(code, line);
  }
  try {
    await expectReply(220, "greeting");
    await command("EHLO client.test", 250);
    await command(`MAIL FROM:<${from}>`, 250);
    await command(`RCPT TO:<${to}>`, 250);
    await command("DATA", 354);
    const head = [
      `From: Sender <${from}>`,
      `To: <${to}>`,
      `Subject: ${subject}`,
      `Date: ${new Date().toUTCString()}`,
      `Message-ID: <${Date.now()}.${Math.random().toString(36).slice(2)}@client.test>`,
      "MIME-Version: 1.0",
      ...(Object.keys(headers).some((k) => k.toLowerCase() === "content-type")
        ? []
        : ["Content-Type: text/plain; charset=utf-8"]),
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    ];
    const body = text.split(/\r?\n/).map((l) => (l.startsWith(".") ? `.${l}` : l));
    sock.write(`${[...head, "", ...body].join("\r\n")}\r\n.\r\n`);
    await expectReply(250, "end of DATA");
    await command("QUIT", 221);
  } finally {
    sock.destroy();
  }
}
