// bench/webhooks-e2e: receipted, delivered events per second end to end. One gateway (its own process) with
// one webhook endpoint; a receiver in another process; concurrent 2026-07-28 tools/call requests over
// undici. The figure is calls / (first call → last event received): every call receipted, its event signed
// and delivered in order. Authentication is the test harness's allow-all authorizer (as bench/receipts.mjs:
// this measures receipts and events, not OAuth). Run after `pnpm build` (about 20 s):
//   node bench/webhooks-e2e.mjs            WEBHOOK_E2E_CALLS (default 10000), WEBHOOK_E2E_CONCURRENCY (8)
import { execFileSync, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  allowAllOrderCall,
  benchChild,
  benchDirectory,
  freePort,
  gatewayExecArgv,
  processStats,
  RECEIPTS_KEY_ENV,
  serveWithAllowAllAuthorizer,
  startWebhookReceiver,
} from './support.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const API_KEY = 'bench-orders-key';
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const ENV = {
  ...process.env,
  ...RECEIPTS_KEY_ENV,
  GATEWAY_SECRET_ORDERS_API_KEY: API_KEY,
  GATEWAY_SECRET_BENCH_WEBHOOK: SECRET,
  NO_COLOR: '1',
};
const CALLS = Number(process.env.WEBHOOK_E2E_CALLS ?? 10_000);
const CONCURRENCY = Number(process.env.WEBHOOK_E2E_CONCURRENCY ?? 8);

if (process.argv[2] === 'child') {
  // One gateway, as `gateway serve` starts it, with the allow-all authorizer (bench/support.mjs).
  await serveWithAllowAllAuthorizer({ logins: ['orders/api_key'] });
} else {
  const { Agent, request } = await import(pathToFileURL(createRequire(join(root, 'packages/server/package.json')).resolve('undici')).href);
  const { startOrdersApi } = await import(pathToFileURL(join(root, 'examples/orders-api/server.mjs')).href);
  const api = await startOrdersApi({ host: '127.0.0.1', port: 0, apiKey: API_KEY });

  // The receiver: its own process; counts events and remembers the last time one arrived.
  const receiver = await startWebhookReceiver();
  const receiverState = receiver.state;
  const directory = benchDirectory('gateway-bench-webhooks-');
  const cli = (args) =>
    execFileSync(process.execPath, [join(root, 'packages/cli/dist/main.js'), ...args], { cwd: directory, env: ENV, stdio: 'ignore' });
  writeFileSync(
    join(directory, 'openapi.yaml'),
    readFileSync(join(root, 'examples/orders-api/openapi.yaml'), 'utf8').replace('http://127.0.0.1:4010', api.url),
  );
  const port = await freePort();
  writeFileSync(
    join(directory, 'gateway.yaml'),
    [
      'gateway:',
      `  url: http://127.0.0.1:${port}`,
      `  listen: 127.0.0.1:${port}`,
      'sources:',
      '  orders:',
      '    kind: openapi',
      '    document: openapi.yaml',
      '    credentials:',
      '      api_key: { type: apiKey, secret: orders-api-key }',
      'trust:',
      '  keys: [keys/publisher.pub.jwk]',
      'network:',
      '  allowPrivateNetworks: [127.0.0.1/32]',
      'vault:',
      '  provider: env',
      'drift:',
      '  enabled: false',
      'webhooks:',
      '  bench:',
      `    url: ${receiver.url}`,
      '    secret: bench-webhook',
      '',
    ].join('\n'),
  );
  cli(['keys', 'generate', '--out', 'keys']);
  cli(['import', 'orders']);
  cli(['review', 'orders', '--all-supported', '--no-interactive']);
  cli(['publish', 'orders', '--key', 'keys/publisher.private.jwk', '--publisher', 'bench@example.com']);

  const child = benchChild(
    fork(fileURLToPath(import.meta.url), ['child'], {
      env: { ...ENV, BENCH_CONFIG: join(directory, 'gateway.yaml') },
      stdio: 'inherit',
      execArgv: gatewayExecArgv(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
    }),
  );
  const mcpUrl = await new Promise((resolve) => child.once('message', (message) => resolve(message.mcpUrl)));

  const agent = new Agent({ connections: CONCURRENCY, keepAliveTimeout: 30_000 });
  const { body, headers } = allowAllOrderCall();
  const callOnce = async () => {
    const response = await request(mcpUrl, { method: 'POST', headers, body, dispatcher: agent });
    const text = await response.body.text();
    if (response.statusCode !== 200 || !text.includes('ord_1001'))
      throw new Error(`unexpected answer ${response.statusCode}: ${text.slice(0, 200)}`);
  };
  // Warm-up (its events are counted out below).
  for (let index = 0; index < 200; index += 1) await callOnce();
  while ((await receiverState()).received < 200) await new Promise((resolve) => setTimeout(resolve, 20));

  const cpuOf = () => ({ gateway: processStats(child.pid).cpuMs, receiver: processStats(receiver.pid).cpuMs, client: process.cpuUsage() });
  const cpuBefore = cpuOf();
  let next = 0;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < CALLS) {
        next += 1;
        await callOnce();
      }
    }),
  );
  const callsDone = Date.now();
  let state = await receiverState();
  const receivedAtCallsDone = state.received - 200;
  while (state.received < CALLS + 200) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    state = await receiverState();
  }
  const seconds = (state.lastAt - started) / 1000;
  const cpuAfter = cpuOf();
  const clientCpu = process.cpuUsage(cpuBefore.client);
  const perCall = (ms) => (ms / CALLS).toFixed(3);
  console.log(`${CALLS} tools/call, ${CONCURRENCY} concurrent, each receipted and its event delivered in order to a loopback receiver`);
  console.log(`  calls answered: ${Math.round(CALLS / ((callsDone - started) / 1000))}/s`);
  const backlog = CALLS - receivedAtCallsDone;
  console.log(
    `  events delivered while the calls ran: ${Math.round(receivedAtCallsDone / ((callsDone - started) / 1000))}/s; ` +
      `the ${backlog} left after them: ${Math.round(backlog / ((state.lastAt - callsDone) / 1000))}/s`,
  );
  console.log(
    `  receipted, delivered events: ${Math.round(CALLS / seconds)}/s ` +
      `(last event ${state.lastAt - callsDone} ms after the last answer) — ` +
      `target >= 2000: ${CALLS / seconds >= 2000 ? 'met' : 'MISSED'}`,
  );
  console.log(
    `  CPU ms per call: gateway ${perCall(cpuAfter.gateway - cpuBefore.gateway)} (all its threads), ` +
      `receiver ${perCall(cpuAfter.receiver - cpuBefore.receiver)}, ` +
      `load client + upstream ${perCall((clientCpu.user + clientCpu.system) / 1000)} (one process); 2 cores = 2 ms of CPU per ms`,
  );

  child.send('stop');
  await new Promise((resolve) => child.once('exit', resolve));
  receiver.stop();
  await agent.close();
  await api.close();
}
