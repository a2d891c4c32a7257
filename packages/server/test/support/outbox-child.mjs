// A stand-in gateway process for the crash test: it writes receipts (a table standing in for the receipt
// log) with the outbox hook in the same transaction, and delivers with the dispatcher, against one SQLite
// file. Killed with SIGKILL at any point, then started again. Runs the built code (packages/server/dist).
import { createGuardedAgent } from '@gateway/runtime';
import { createDispatcher, createOutbox } from '../../dist/outbox/index.js';
import { outboxMigrations, sqliteOutboxStore } from '../../dist/outbox/sqlite/index.js';
import { openDatabase } from '../../dist/store/sqlite/database.js';

const [databasePath, url, totalText, secret] = process.argv.slice(2);
const total = Number(totalText);
const database = openDatabase(databasePath, outboxMigrations);
database.exec('CREATE TABLE IF NOT EXISTS crash_receipts (n INTEGER PRIMARY KEY)');
const endpoints = [
  { name: 'audit', url, secrets: () => [secret], retry: { attempts: 1000, initialDelayMs: 5, maxDelayMs: 50, timeoutMs: 5000 } },
];
const outbox = createOutbox({ store: sqliteOutboxStore(database), endpoints });
const dispatcher = createDispatcher({
  store: outbox.store,
  endpoints,
  agent: createGuardedAgent({ allowPrivateNetworks: ['127.0.0.1/32'] }),
  leaseMs: 500,
  pollIntervalMs: 50,
});
outbox.subscribe(() => dispatcher.notify());
dispatcher.start();

const insert = database.prepare('INSERT INTO crash_receipts (n) VALUES (?)');
const write = database.transaction((n) => {
  insert.run(n);
  outbox.onReceipt({
    id: `receipt-${n}`,
    index: n,
    time: new Date().toISOString(),
    session: 'session-1',
    person: 'local:ada',
    clientId: 'client-1',
    tool: 'get_pet',
    source: 'pets',
    publication: 'publication-1',
    fingerprint: 'sha256:abc',
    login: null,
    outcome: 'allowed',
    reason: null,
    upstreamStatus: 200,
    durationMs: 1,
    argumentsDigest: 'hmac-sha256:00',
    resultDigest: null,
  });
});
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let next = database.prepare('SELECT COUNT(*) AS count FROM crash_receipts').get().count;
while (next < total) {
  for (let index = 0; index < 2 && next < total; index += 1) write(next++);
  await sleep(1);
}
while ((await outbox.store.endpoint('audit')).counts.pending > 0) await sleep(20);
process.stdout.write('done\n');
await dispatcher.stop();
database.close();
process.exit(0);
