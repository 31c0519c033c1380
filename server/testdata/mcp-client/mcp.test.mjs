// An independent MCP client, the TypeScript SDK from npm, against a real
// `burner serve` (spec §11). e2e_mcp_test.go starts burner and runs this
// file with node's test runner; the environment names what it started:
//   BURNER_URL      http://127.0.0.1:PORT
//   BURNER_SMTP     127.0.0.1:PORT
//   BURNER_DOMAIN   the first of smtp.domains
//   BURNER_KEY      a key that reaches every inbox and may delete
//   BURNER_KEY_RO   a read-only key
//   BURNER_KEY_CI   a key scoped to ci-*
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this through e2e_mcp_test.go`);
  return v;
};
const base = env('BURNER_URL');
const domain = env('BURNER_DOMAIN');
const [smtpHost, smtpPort] = env('BURNER_SMTP').split(':');

// connect initializes an MCP client with key as its bearer token, the
// Authorization header an MCP client's configuration adds.
async function connect(key, t) {
  const client = new Client({ name: 'burner-ts-test', version: '1.0.0' });
  const headers = key ? { Authorization: `Bearer ${key}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', base), { requestInit: { headers } });
  await client.connect(transport);
  t.after(() => client.close());
  return client;
}

// call calls a tool and returns its result; it throws on a protocol error.
async function call(client, name, args) {
  return client.callTool({ name, arguments: args }, undefined, { timeout: 90_000 });
}

// ok calls a tool, asserts that it succeeded and returns its structured
// result.
async function ok(client, name, args) {
  const res = await call(client, name, args);
  assert.equal(res.isError ?? false, false, `${name}(${JSON.stringify(args)}) failed: ${JSON.stringify(res.content)}`);
  assert.ok(res.structuredContent, `${name} gave no structured result`);
  return res.structuredContent;
}

// toolError calls a tool and asserts that it fails, as a tool error, with
// message.
async function toolError(client, name, args, message) {
  const res = await call(client, name, args);
  assert.equal(res.isError, true, `${name}(${JSON.stringify(args)}) = ${JSON.stringify(res)}, want isError`);
  assert.equal(res.content[0].text, message);
}

// sendMail delivers one message over SMTP with node's net module, and
// resolves once burner has answered 250 to its data.
function sendMail(to, subject, text) {
  const data = [
    'From: Example Service <noreply@example.com>',
    `To: ${to}`,
    `Subject: ${subject}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    ...text.split('\n'),
  ].map((l) => (l.startsWith('.') ? '.' + l : l)).join('\r\n');
  const steps = [
    [null, 220],
    ['EHLO client.test', 250],
    ['MAIL FROM:<noreply@example.com>', 250],
    [`RCPT TO:<${to}>`, 250],
    ['DATA', 354],
    [data + '\r\n.', 250],
    ['QUIT', 221],
  ];
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(smtpPort), smtpHost);
    sock.setTimeout(20_000, () => sock.destroy(new Error('SMTP timed out')));
    let buf = '';
    let step = 0;
    sock.on('error', reject);
    sock.on('data', (chunk) => {
      buf += chunk.toString('utf8');
      // A reply is complete at a line "NNN text" (not "NNN-text").
      for (;;) {
        const m = buf.match(/^(\d{3}) [^\r\n]*\r\n/m);
        if (!m) return;
        const end = buf.indexOf(m[0]) + m[0].length;
        buf = buf.slice(end);
        const want = steps[step][1];
        if (Number(m[1]) !== want) {
          sock.destroy();
          reject(new Error(`SMTP answered ${m[0].trim()} to ${steps[step][0]}, want ${want}`));
          return;
        }
        step++;
        if (step === steps.length) {
          sock.end();
          resolve();
          return;
        }
        sock.write(steps[step][0] + '\r\n');
      }
    });
  });
}

const signup = (addr) => sendMail(addr, 'Your verification code',
  'Welcome! Your verification code is 482913.\nOr open https://example.com/verify?t=777777&u=1 to confirm.');

const allTools = ['clear_inbox', 'delete_email', 'extract_codes', 'list_emails', 'list_sessions', 'new_address', 'read_email',
  'wait_for_code', 'wait_for_email', 'wait_for_link'];

// fenced returns what a tool's text says outside the fences of its
// notice's nonce and inside them.
function fenced(text) {
  const m = [...text.matchAll(/Text inside (untrusted-mail-[0-9a-f]{16}) tags/g)];
  assert.equal(m.length, 1, `one notice in ${text}`);
  const [open, close] = [`<${m[0][1]}>`, `</${m[0][1]}>`];
  let outside = '';
  let inside = '';
  for (let rest = text; ;) {
    const i = rest.indexOf(open);
    if (i < 0) { outside += rest; break; }
    outside += rest.slice(0, i);
    const j = rest.indexOf(close, i);
    assert.ok(j > i, `a closed fence in ${text}`);
    inside += rest.slice(i + open.length, j) + '\n';
    rest = rest.slice(j + close.length);
  }
  return { outside, inside };
}

test('initialize and tools/list with a full key', async (t) => {
  const client = await connect(env('BURNER_KEY'), t);
  assert.equal(client.getServerVersion().name, 'burner');
  assert.match(client.getInstructions(), /untrusted/);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((tl) => tl.name).sort(), allTools);
  for (const tl of tools) {
    const destructive = tl.name === 'delete_email' || tl.name === 'clear_inbox';
    assert.equal(tl.annotations.readOnlyHint, !destructive, `${tl.name}: readOnlyHint`);
    assert.equal(tl.annotations.destructiveHint === true, destructive, `${tl.name}: destructiveHint`);
    assert.equal(tl.inputSchema.type, 'object');
    assert.equal(tl.outputSchema.type, 'object');
  }
});

test('new address, SMTP delivery, wait, read, codes, delete', async (t) => {
  const client = await connect(env('BURNER_KEY'), t);
  const addr = await ok(client, 'new_address', { prefix: 'signup-' });
  assert.match(addr.inbox, /^signup-[a-z2-7]{24}$/);
  assert.equal(addr.address, `${addr.inbox}@${domain}`);

  await signup(addr.address);
  const waited = await ok(client, 'wait_for_email', { inbox: addr.inbox, from: 'noreply@example.com', timeout_s: 10 });
  assert.equal(waited.arrived, true);
  assert.equal(waited.email.subject, 'Your verification code');
  assert.equal(waited.email.fromName, 'Example Service');
  const id = waited.email.id;

  const list = await ok(client, 'list_emails', { inbox: addr.inbox, search: 'welcome', limit: 5 });
  assert.deepEqual(list.emails.map((e) => e.id), [id]);
  assert.equal('body' in list.emails[0], false, 'list_emails gives no body');

  const read = await ok(client, 'read_email', { id });
  assert.match(read.text, /Your verification code is 482913\./);
  assert.deepEqual(read.codes, ['482913']);
  assert.deepEqual(read.links, ['https://example.com/verify?t=777777&u=1']);
  assert.deepEqual(read.attachments, []);
  assert.equal('body' in read, false, 'read_email gives the body only with include_html');
  const html = await ok(client, 'read_email', { id, include_html: true });
  assert.match(html.body, /<a href="https:\/\/example\.com\/verify\?t=777777&amp;u=1"/);

  // The session log names what the application's SMTP client did.
  const { sessions } = await ok(client, 'list_sessions', { inbox: addr.address, limit: 5 });
  const delivered = sessions.find((s) => s.emails.includes(id));
  assert.ok(delivered, `a session stored ${id}: ${JSON.stringify(sessions)}`);
  assert.equal(delivered.outcome, 'delivered');
  assert.match(delivered.data.reply, new RegExp(`^250 2\\.0\\.0 OK ${delivered.id}$`));

  assert.deepEqual((await ok(client, 'extract_codes', { id })).codes, ['482913']);
  assert.deepEqual((await ok(client, 'extract_codes', { id, pattern: 't=(\\d+)' })).codes, ['777777']);
  await toolError(client, 'extract_codes', { id, pattern: '(' }, "'pattern' must be a valid regular expression.");

  assert.deepEqual(await ok(client, 'delete_email', { id }), { deleted: true });
  await toolError(client, 'read_email', { id }, 'Email not found');

  await signup(addr.address);
  await signup(addr.address);
  assert.deepEqual(await ok(client, 'clear_inbox', { inbox: addr.inbox }), { deleted: 2 });
  assert.deepEqual((await ok(client, 'list_emails', { inbox: addr.inbox })).emails, []);
});

test('wait_for_email wakes on delivery, and says plainly when nothing came', async (t) => {
  const client = await connect(env('BURNER_KEY'), t);
  const addr = await ok(client, 'new_address', {});
  const started = Date.now();
  const waiting = ok(client, 'wait_for_email', { inbox: addr.inbox, subject: 'verification', timeout_s: 30 });
  await signup(addr.address);
  const waited = await waiting;
  assert.equal(waited.arrived, true);
  assert.ok(Date.now() - started < 20_000, 'woken by the delivery, not by the timeout');

  const res = await call(client, 'wait_for_email', { inbox: 'nobody-writes-here', timeout_s: 1, since: 1795694400 });
  assert.equal(res.isError ?? false, false);
  assert.deepEqual(res.structuredContent, { arrived: false, since: 1795694400 });
  assert.equal(res.content[0].text, 'No matching email arrived in nobody-writes-here within 1 s. ' +
    'To keep waiting without missing one, call wait_for_email again with since: 1795694400.\n');
  const began = Math.floor(Date.now() / 1000);
  const again = await ok(client, 'wait_for_email', { inbox: 'nobody-writes-here', timeout_s: 1 });
  assert.equal(again.arrived, false);
  assert.ok(again.since >= began && again.since <= Date.now() / 1000, `since ${again.since}: the time the wait began`);
});

test('wait_for_code and wait_for_link give the value, verbatim, for a full address', async (t) => {
  const client = await connect(env('BURNER_KEY'), t);
  const addr = await ok(client, 'new_address', { prefix: 'values-' });
  const code = ok(client, 'wait_for_code', { inbox: addr.address, from: 'example.com', timeout_s: 20 });
  await signup(addr.address);
  const got = await code;
  assert.equal(got.arrived, true);
  assert.equal(got.code, '482913');
  assert.deepEqual(got.codes, ['482913']);
  assert.equal(got.subject, 'Your verification code');
  const link = await ok(client, 'wait_for_link', { inbox: addr.address, contains: '/verify', timeout_s: 5 });
  assert.deepEqual(link, { arrived: true, link: 'https://example.com/verify?t=777777&u=1', link_text: 'https://example.com/verify?t=777777&u=1',
    email_id: got.email_id, subject: 'Your verification code' });

  // The text is words, with the sender's fenced: the link as written,
  // not as JSON would escape it.
  const res = await call(client, 'wait_for_link', { inbox: addr.inbox, timeout_s: 5 });
  const { outside, inside } = fenced(res.content[0].text);
  assert.match(inside, /^https:\/\/example\.com\/verify\?t=777777&u=1$/m);
  assert.doesNotMatch(outside, /example\.com|verification/);
  assert.doesNotMatch(res.content[0].text, /\\u0026/);

  await toolError(client, 'wait_for_code', { inbox: `${addr.inbox}@elsewhere.test` },
    `'inbox' must be a local part, or an address on ${domain}.`);
});

test('a wait sends progress notifications at least every 5 s', async (t) => {
  const client = await connect(env('BURNER_KEY'), t);
  const seen = [];
  const res = await client.callTool({ name: 'wait_for_email', arguments: { inbox: 'nobody-writes-here', timeout_s: 9 } },
    undefined, { timeout: 90_000, onprogress: (p) => seen.push(p) });
  assert.equal(res.structuredContent.arrived, false);
  assert.ok(seen.length >= 2, `${seen.length} progress notifications in 9 s: ${JSON.stringify(seen)}`);
  for (const [i, p] of seen.entries()) {
    assert.equal(p.total, 9);
    assert.ok(i === 0 || p.progress > seen[i - 1].progress, `progress grows: ${JSON.stringify(seen)}`);
    assert.match(p.message, /^Waiting for mail in nobody-writes-here: \d+ of 9 s\.$/);
  }
});

test('tool errors are in the API words', async (t) => {
  const client = await connect(env('BURNER_KEY'), t);
  await toolError(client, 'list_emails', { inbox: 'a b' }, 'Invalid local part. Only alphanumeric characters and _-+. are allowed.');
  await toolError(client, 'list_emails', { inbox: 'a', limit: 11 }, "'limit' must be an integer from 1 to 10.");
  await toolError(client, 'wait_for_email', { inbox: 'a', timeout_s: 51 }, "'timeout_s' must be an integer from 1 to 50.");
  await toolError(client, 'wait_for_link', { inbox: 'a', timeout_s: 0 }, "'timeout_s' must be an integer from 1 to 50.");
  await toolError(client, 'read_email', { id: 'not-a-uuid' }, 'Email not found');
});

test('a read-only key lists no destructive tools', async (t) => {
  const client = await connect(env('BURNER_KEY_RO'), t);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((tl) => tl.name).sort(), allTools.filter((n) => n !== 'delete_email' && n !== 'clear_inbox'));
  assert.ok(tools.every((tl) => tl.annotations.readOnlyHint === true));
  await assert.rejects(call(client, 'clear_inbox', { inbox: 'anything' }), /clear_inbox/);
});

test('a scoped key is refused outside its patterns', async (t) => {
  const client = await connect(env('BURNER_KEY_CI'), t);
  const addr = await ok(client, 'new_address', { prefix: 'agent-' });
  assert.match(addr.inbox, /^ci-agent-[a-z2-7]{24}$/);
  await signup(addr.address);
  assert.equal((await ok(client, 'wait_for_email', { inbox: addr.inbox, timeout_s: 10 })).arrived, true);

  await signup(`outsider@${domain}`);
  const refused = 'This API key may not access this inbox.';
  await toolError(client, 'list_emails', { inbox: 'outsider' }, refused);
  await toolError(client, 'wait_for_email', { inbox: 'outsider', timeout_s: 1 }, refused);
  await toolError(client, 'clear_inbox', { inbox: 'outsider' }, refused);
  const full = await connect(env('BURNER_KEY'), t);
  const [outside] = (await ok(full, 'list_emails', { inbox: 'outsider' })).emails;
  await toolError(client, 'read_email', { id: outside.id }, 'Email not found');
  await toolError(client, 'delete_email', { id: outside.id }, 'Email not found');
});

test('no key, or a wrong one: 401 as the API answers', async () => {
  for (const auth of [undefined, 'Bearer bnr_not-a-key']) {
    const res = await fetch(new URL('/mcp', base), {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        ...(auth ? { Authorization: auth } : {}),
      },
      body: JSON.stringify({
        jsonrpc: '2.0', id: 1, method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'fetch', version: '1' } },
      }),
    });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('www-authenticate'), 'Bearer');
    assert.deepEqual(await res.json(), { error: 'Missing or invalid API key.' });
  }
  const client = new Client({ name: 'burner-ts-test', version: '1.0.0' });
  await assert.rejects(client.connect(new StreamableHTTPClientTransport(new URL('/mcp', base))));
});
