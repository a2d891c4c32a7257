import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { temporaryDirectory } from '../../../../../test-support/cli.js';
import { sqliteUnitOfWork } from '../../../test/support/sqlite-unit-of-work.js';
import { openDatabase } from '../../store/sqlite/database.js';
import { outboxDeliveryContract } from '../contract/delivery.contract.js';
import { outboxEventsContract } from '../contract/events.contract.js';
import type { OutboxStoreFactory } from '../contract/harness.js';
import { outboxSequencesContract } from '../contract/sequences.contract.js';
import { outboxMigrations, sqliteOutboxStore } from './index.js';

/** Each test: a fresh SQLite file in a temporary directory, migrated as the gateway migrates it. */
const sqlite: OutboxStoreFactory = async () => {
  const directory = await temporaryDirectory('gateway-outbox-store-');
  const database = openDatabase(join(directory.path, 'gateway.db'), outboxMigrations);
  return {
    store: sqliteOutboxStore(database),
    unitOfWork: sqliteUnitOfWork(database),
    async close() {
      database.close();
      await directory.cleanup();
    },
  };
};

outboxSequencesContract('SQLite', sqlite);
outboxDeliveryContract('SQLite', sqlite);
outboxEventsContract('SQLite', sqlite);

describe('the SQLite adapter of the outbox', () => {
  it('is the only code of the outbox and webhooks areas that names better-sqlite3, SqliteDatabase or prepare()', () => {
    const server = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
    const naming = ['outbox', 'webhooks']
      .flatMap((area) => readdirSync(join(server, area), { recursive: true, encoding: 'utf8' }).map((file) => `${area}/${file}`))
      .map((file) => file.split('\\').join('/'))
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.startsWith('outbox/sqlite/'))
      .filter((file) => /better-sqlite3|SqliteDatabase|\.prepare\(/.test(readFileSync(join(server, file), 'utf8')))
      .sort();
    expect(naming).toEqual([]);
  });
});
