// bench/receipts: what receipting adds to a tools/call. Two gateways over the same signed lock and the same
// example upstream, one with receipts on (default) and one with `receipts.enabled: false`, each in its own
// process, measured in one run with interleaved rounds (so machine noise hits both alike). Sequential
// 2026-07-28 fast-path tools/call requests over undici; prints p50 of each and the difference/ratio.
// Authentication is the test harness's allow-all authorizer (the bench measures receipts, not OAuth; the
// OAuth path is in bench/server.mjs). Run after `pnpm build`: node bench/receipts.mjs (about 20 s);
// BENCH_CONTROL=1 adds a second receipts-on gateway to show the noise floor of the machine in the same run;
// BENCH_JOURNAL=0 measures `receipts.journal: false` (each call answered after its receipt's commit).
import { execFileSync, fork } from 'node:child_process';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  allowAllOrderCall,
  benchChild,
  benchDirectory,
  freePort,
  gatewayExecArgv,
  RECEIPTS_KEY_ENV,
  serveWithAllowAllAuthorizer,
} from './support.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const API_KEY = 'bench-orders-key';
const ENV = { ...process.env, ...RECEIPTS_KEY_ENV, GATEWAY_SECRET_ORDERS_API_KEY: API_KEY, NO_COLOR: '1' };
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const CALLS_PER_ROUND = Number(process.env.BENCH_CALLS ?? 300);

if (process.argv[2] === 'child') {
  // One gateway, as `gateway serve` starts it, with the allow-all authorizer (bench/support.mjs).
  await serveWithAllowAllAuthorizer({ logins: ['orders/api_key'] });
} else {
  const { Agent, request } = await import(pathToFileURL(createRequire(join(root, 'packages/server/package.json')).resolve('undici')).href);
  const { startOrdersApi } = await import(pathToFileURL(join(root, 'examples/orders-api/server.mjs')).href);
  const api = await startOrdersApi({ host: '127.0.0.1', port: 0, apiKey: API_KEY });
  const cli = (args, cwd) =>
    execFileSync(process.execPath, [join(root, 'packages/cli/dist/main.js'), ...args], { cwd, env: ENV, stdio: 'ignore' });

  // One workspace made by the real CLI, copied for the second gateway (same lock, own port and database).
  const on = benchDirectory('gateway-bench-receipts-');
  const document = readFileSync(join(root, 'examples/orders-api/openapi.yaml'), 'utf8').replace('http://127.0.0.1:4010', api.url);
  writeFileSync(join(on, 'openapi.yaml'), document);
  const config = (port, extra) =>
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
      extra,
      '',
    ].join('\n');
  // BENCH_JOURNAL=0: the receipts-on gateways answer after their receipt's commit (receipts.journal: false).
  const onExtra = process.env.BENCH_JOURNAL === '0' ? 'receipts:\n  journal: false' : '';
  writeFileSync(join(on, 'gateway.yaml'), config(await freePort(), onExtra));
  cli(['keys', 'generate', '--out', 'keys'], on);
  cli(['import', 'orders'], on);
  cli(['review', 'orders', '--all-supported', '--no-interactive'], on);
  cli(['publish', 'orders', '--key', 'keys/publisher.private.jwk', '--publisher', 'bench@example.com'], on);
  const off = benchDirectory('gateway-bench-receipts-off-');
  cpSync(on, off, { recursive: true });
  writeFileSync(join(off, 'gateway.yaml'), config(await freePort(), 'receipts:\n  enabled: false'));

  const children = [];
  const start = (directory) =>
    new Promise((resolve) => {
      const child = benchChild(
        fork(fileURLToPath(import.meta.url), ['child'], {
          env: { ...ENV, BENCH_CONFIG: join(directory, 'gateway.yaml') },
          stdio: 'inherit',
          execArgv: gatewayExecArgv(),
        }),
      );
      children.push(child);
      child.once('message', (message) => resolve(message.mcpUrl));
    });
  // BENCH_CONTROL=1: a third gateway identical to "on", to show this machine's noise floor in the same run.
  const control = process.env.BENCH_CONTROL === '1' ? benchDirectory('gateway-bench-receipts-control-') : undefined;
  if (control) {
    cpSync(on, control, { recursive: true });
    writeFileSync(join(control, 'gateway.yaml'), config(await freePort(), onExtra));
  }
  const [onUrl, offUrl, controlUrl] = await Promise.all([start(on), start(off), ...(control ? [start(control)] : [])]);

  const agent = new Agent({ connections: 1, keepAliveTimeout: 30_000 });
  const { body, headers } = allowAllOrderCall();
  const timings = { on: [], off: [], control: [] };
  /** Per round: [p50 on, p50 off], for the median of paired differences (robust to the load drifting). */
  const rounds = [];
  const round = async (url, sink, count) => {
    for (let index = 0; index < count; index += 1) {
      const started = performance.now();
      const response = await request(url, { method: 'POST', headers, body, dispatcher: agent });
      const text = await response.body.text();
      const elapsed = performance.now() - started;
      if (response.statusCode !== 200 || !text.includes('ord_1001'))
        throw new Error(`unexpected answer ${response.statusCode}: ${text.slice(0, 200)}`);
      sink?.push(elapsed);
    }
  };
  await round(onUrl, undefined, 200);
  await round(offUrl, undefined, 200);
  if (controlUrl) await round(controlUrl, undefined, 200);
  const p50 = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  for (let index = 0; index < ROUNDS; index += 1) {
    // Alternate which goes first, so neither always runs on a warmer machine.
    const gateways = [['on', onUrl], ['off', offUrl], ...(controlUrl ? [['control', controlUrl]] : [])];
    const order = index % 2 === 0 ? gateways : [...gateways].reverse();
    const roundP50 = {};
    for (const [name, url] of order) {
      const sink = [];
      await round(url, sink, CALLS_PER_ROUND);
      timings[name].push(...sink);
      roundP50[name] = p50(sink);
    }
    rounds.push(roundP50);
  }
  const onP50 = p50(timings.on);
  const offP50 = p50(timings.off);
  console.log(`tools/call p50, ${timings.on.length} calls each, sequential, fast path:`);
  console.log(`  receipts off: ${offP50.toFixed(3)} ms`);
  console.log(`  receipts on:  ${onP50.toFixed(3)} ms`);
  console.log(
    `  added: ${(onP50 - offP50).toFixed(3)} ms p50 (ratio ${(onP50 / offP50).toFixed(3)}) — ` +
      `target <= 0.1 ms: ${onP50 - offP50 <= 0.1 ? 'met' : 'MISSED'}`,
  );
  console.log(`  median over ${ROUNDS} rounds of (round p50 on − round p50 off): ${p50(rounds.map((r) => r.on - r.off)).toFixed(3)} ms`);
  if (controlUrl) {
    console.log(
      `  control (a second "on" gateway): ${p50(timings.control).toFixed(3)} ms p50; median round ` +
        `difference control − on: ${p50(rounds.map((r) => r.control - r.on)).toFixed(3)} ms (the noise floor)`,
    );
  }

  for (const child of children) child.send('stop');
  await Promise.all(children.map((child) => new Promise((resolve) => child.once('exit', resolve))));
  await agent.close();
  await api.close();
}
