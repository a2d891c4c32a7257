// A stand-in gateway process for the drift-leader test: drift alone (startDrift) on a shared SQLite file, its
// description requests tagged with its holder name so the test sees who polls. Killed with SIGKILL by the test, so it
// never releases its lease. Runs the built code (packages/server/dist).
import { join } from 'node:path';
import { parseConfig } from '@gateway/core';
import { createGuardedAgent } from '@gateway/runtime';
import { startDrift } from '../../dist/drift/index.js';
import { driftMigrations, sqliteDriftStore } from '../../dist/drift/sqlite/index.js';
import { PublicationRegistry } from '../../dist/publications/registry.js';
import { openDatabase } from '../../dist/store/sqlite/database.js';
import { leaseMigrations, sqliteLeases } from '../../dist/store/sqlite/leases.js';

const [directory, documentUrl, holder, leaseMsText] = process.argv.slice(2);
const database = openDatabase(join(directory, 'gateway.db'), [...driftMigrations, ...leaseMigrations]);
const loaded = parseConfig(
  `gateway:\n  url: http://127.0.0.1:8080\nsources:\n  orders:\n    kind: openapi\n    document: '${documentUrl}'\n`,
  join(directory, 'gateway.yaml'),
);
const agent = createGuardedAgent({ allowPrivateNetworks: ['127.0.0.1/32'] }).compose(
  (dispatch) => (options, handler) => dispatch({ ...options, headers: { ...options.headers, 'x-drift-holder': holder } }, handler),
);
const silent = { info() {}, warn() {}, error() {} };
const drift = await startDrift({
  loaded,
  store: sqliteDriftStore(database),
  leases: sqliteLeases(database),
  registry: new PublicationRegistry(),
  agent,
  logger: silent,
  intervalMs: 50,
  holder,
  leaseMs: Number(leaseMsText),
});
process.stdout.write(`${drift.isLeader() ? 'leader' : 'follower'}\n`);
setInterval(() => undefined, 60_000);
