// Webhook delivery throughput: receipts appended through the outbox hook (in transactions, as the receipt
// log does), delivered in order by the dispatcher to a loopback receiver that verifies nothing and answers
// 204. Prints receipts/s appended and events/s delivered (target: at least 2,000/s). Needs `pnpm build`.
// Not part of the test suite; runs for a few seconds.
import { spawn } from 'node:child_process';
import { benchChild, benchDirectory } from './support.mjs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createGuardedAgent } from '../packages/runtime/dist/index.js';
import { createDispatcher, createOutbox } from '../packages/server/dist/outbox/index.js';
import { outboxMigrations, sqliteOutboxStore } from '../packages/server/dist/outbox/sqlite/index.js';
import { openDatabase } from '../packages/server/dist/store/sqlite/database.js';
import { startBackgroundCheckpointer } from '../packages/server/dist/store/sqlite/checkpointer.js';

const TOTAL = Number(process.env.WEBHOOK_BENCH_EVENTS ?? 20_000);
const BATCH = 100;

// The receiver runs in its own process, as a real one would (sharing this event loop would halve the figure).
const receiverSource = `
  const { createServer } = require('node:http');
  let received = 0;
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => { received += 1; response.writeHead(204).end(); });
  });
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
  process.on('message', () => process.send({ received }));
`;
const receiverProcess = benchChild(spawn(process.execPath, ['-e', receiverSource], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
const port = await new Promise((resolve) => receiverProcess.once('message', (message) => resolve(message.port)));
const receivedCount = () =>
  new Promise((resolve) => {
    receiverProcess.once('message', (message) => resolve(message.received));
    receiverProcess.send('count');
  });
const url = `http://127.0.0.1:${port}/hooks`;

const directory = benchDirectory('gateway-webhooks-bench-');
const database = openDatabase(join(directory, 'gateway.db'), outboxMigrations);
// As the gateway does: WAL checkpoints on their own thread, not inside the commits measured here.
const checkpointer = startBackgroundCheckpointer(database, join(directory, 'gateway.db'));
await new Promise((resolve) => setTimeout(resolve, 200));
const secret = `whsec_${randomBytes(32).toString('base64')}`;
const endpoints = [{ name: 'audit', url, secrets: () => [secret] }];
const outbox = createOutbox({ store: sqliteOutboxStore(database), endpoints });
const agent = createGuardedAgent({ allowPrivateNetworks: ['127.0.0.1/32'] });
const dispatcher = createDispatcher({ store: outbox.store, endpoints, agent });
outbox.subscribe(() => dispatcher.notify());

const receipt = (n) => ({
  id: `receipt-${n}`,
  index: n,
  time: new Date().toISOString(),
  session: 'session-1',
  person: 'local:ada',
  clientId: 'client-1',
  tool: 'get_pet',
  source: 'pets',
  publication: 'publication-1',
  fingerprint: `sha256:${'a'.repeat(64)}`,
  login: 'pets/apiKey',
  outcome: 'allowed',
  reason: null,
  upstreamStatus: 200,
  durationMs: 1.2,
  argumentsDigest: `hmac-sha256:${'b'.repeat(64)}`,
  resultDigest: `hmac-sha256:${'c'.repeat(64)}`,
});

// 1. Appending alone (the cost the hook adds to a receipt's transaction).
const writeBatch = database.transaction((from, count) => {
  for (let n = from; n < from + count; n += 1) outbox.onReceipt(receipt(n));
});
const appendStart = process.hrtime.bigint();
for (let n = 0; n < TOTAL; n += BATCH) writeBatch(n, Math.min(BATCH, TOTAL - n));
const appendMs = Number(process.hrtime.bigint() - appendStart) / 1e6;

// 2. Delivering them all, in order, one at a time (the next is sent only after the previous is acknowledged).
const deliverStart = process.hrtime.bigint();
dispatcher.start();
const countDelivered = database.prepare("SELECT COUNT(*) AS count FROM webhook_outbox WHERE status = 'delivered'");
// Poll the receiver (cheap), not the database: a COUNT over the outbox scans every stored body.
while ((await receivedCount()) < TOTAL) await new Promise((resolve) => setTimeout(resolve, 20));
const deliverMs = Number(process.hrtime.bigint() - deliverStart) / 1e6;
await dispatcher.stop();
const delivered = countDelivered.get().count;

// 3. The ceiling on this machine right now: the same number of sequential POSTs of the same size to the same
// receiver, with no outbox, no signature and no database (strict order allows one request in flight).
const { request } = await import('../packages/server/node_modules/undici/index.js');
const sampleBody = database.prepare('SELECT body FROM webhook_outbox LIMIT 1').get().body;
const rawStart = process.hrtime.bigint();
for (let n = 0; n < TOTAL; n += 1) {
  const response = await request(url, {
    method: 'POST',
    body: sampleBody,
    dispatcher: agent,
    headers: { 'content-type': 'application/cloudevents+json' },
  });
  await response.body.dump();
}
const rawMs = Number(process.hrtime.bigint() - rawStart) / 1e6;

const received = await receivedCount();
const appendPerSecond = Math.round((TOTAL / appendMs) * 1000);
const deliverPerSecond = Math.round((TOTAL / deliverMs) * 1000);
console.log(`events: ${TOTAL} (one endpoint, in order)`);
console.log(`append through the outbox hook: ${appendPerSecond} receipts/s (${((appendMs * 1000) / TOTAL).toFixed(1)} µs per receipt)`);
const rawPerSecond = Math.round((TOTAL / rawMs) * 1000);
console.log(
  `bare sequential POSTs to the same ` +
    `receiver (the ceiling): ${rawPerSecond}/s; delivery reaches ${Math.round((deliverPerSecond / rawPerSecond) * 100)}% of it`,
);
console.log(
  `delivered to a loopback receiver: ${deliverPerSecond} events/s (${delivered} marked delivered, ${received} received) — ` +
    `target >= 2000: ${deliverPerSecond >= 2000 ? 'met' : 'MISSED'}`,
);

await agent.close();
receiverProcess.kill();
await checkpointer.stop();
database.close();
