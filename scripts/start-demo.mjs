#!/usr/bin/env node
// `pnpm start`: the newcomer's path. Starts the bundled example upstream (examples/orders-api on
// 127.0.0.1:4010), puts its demo API key and an admin token in the gateway's file vault, creates a DEMO
// person to sign in with, then runs `gateway serve` on http://127.0.0.1:8080 with the signed tools.lock.
// Everything it creates lives in .gateway/ (git-ignored). DEMO ONLY: never reuse these values.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startOrdersApi } from '../examples/orders-api/server.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const gatewayBinary = fileURLToPath(new URL('../packages/cli/dist/main.js', import.meta.url));
const DEMO_PERSON = 'demo';
const DEMO_PASSWORD = 'demo-password-only'; // demo only, printed below
const DEMO_API_KEY = 'demo-orders-key'; // the example upstream's key

if (!existsSync(gatewayBinary)) {
  console.error('packages/cli/dist is missing: run `pnpm build` first (`pnpm start` does it for you).');
  process.exit(1);
}
// The Node flag `gateway serve` runs with (packages/runtime/src/node-flags.ts).
const { SEMI_SPACE_FLAG } = await import('../packages/runtime/dist/node-flags.js');

function gateway(args, input) {
  const result = spawnSync(process.execPath, [gatewayBinary, ...args], { cwd: root, input: input ?? '', encoding: 'utf8' });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function ensure(description, outcome, acceptableError) {
  if (outcome.status === 0) return;
  if (acceptableError && outcome.stderr.includes(acceptableError)) return;
  console.error(`could not ${description}:\n${outcome.stderr}`);
  process.exit(1);
}

let upstream;
try {
  upstream = await startOrdersApi({ host: '127.0.0.1', port: 4010, apiKey: DEMO_API_KEY });
} catch (error) {
  // A second `pnpm start` (or anything else on 4010): say what to do instead of a stack trace.
  if (error?.code !== 'EADDRINUSE') throw error;
  console.error(
    '127.0.0.1:4010 (the example upstream API) is already in use: is `pnpm start` already running in another terminal?\nStop it with ' +
      'Ctrl+C there, or free the port, then run `pnpm start` again.',
  );
  process.exit(1);
}

const stored = gateway(['secrets', 'list', '--json']);
const names = stored.status === 0 ? (JSON.parse(stored.stdout).secrets?.map((secret) => secret.name) ?? []) : [];
if (!names.includes('orders-api-key')) {
  ensure('store the demo API key', gateway(['secrets', 'set', 'orders-api-key'], DEMO_API_KEY));
}
if (!names.includes('admin-token')) {
  ensure('store an admin token', gateway(['secrets', 'set', 'admin-token'], randomBytes(24).toString('base64url')));
}
ensure('create the demo person', gateway(['people', 'add', DEMO_PERSON, '--email', 'demo@example.com'], DEMO_PASSWORD), 'PERSON_EXISTS');

const server = spawn(process.execPath, [SEMI_SPACE_FLAG, gatewayBinary, 'serve'], { cwd: root, stdio: ['ignore', 'inherit', 'pipe'] });
let ready = false;
server.stderr.on('data', (chunk) => {
  // Logs are JSON lines; show them only when asked, so the newcomer sees the instructions.
  // Plain lines (not JSON logs) are the CLI's own messages, such as a busy port: always show those.
  if (process.env.GATEWAY_DEMO_LOGS === '1') process.stderr.write(chunk);
  else for (const line of chunk.toString().split('\n')) if (line.trim() !== '' && !line.startsWith('{')) process.stderr.write(`${line}\n`);
  if (!ready && chunk.toString().includes('"msg":"Server listening')) ready = true;
});

const stop = async () => {
  server.kill('SIGTERM');
  await upstream.close();
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
server.once('exit', async (code) => {
  await upstream.close().catch(() => undefined);
  process.exit(code ?? 0);
});

setTimeout(() => {
  console.log(`
The example upstream API runs on ${upstream.url}; the gateway serves its 4 published tools.

  MCP endpoint   http://127.0.0.1:8080/mcp
  Client config  {"mcpServers": {"gateway": {"url": "http://127.0.0.1:8080/mcp"}}}
  Sign in as     ${DEMO_PERSON} / ${DEMO_PASSWORD}   (DEMO ONLY, stored in .gateway/people.json)
  Status         pnpm gateway status   (reads the admin token from the local vault)

Your MCP client opens a browser to approve access: pick the tools, the login and a time limit.
Logs: GATEWAY_DEMO_LOGS=1 pnpm start. Stop with Ctrl+C.
`);
}, 1500).unref();
