import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { receiptMigrations } from './receipts/sqlite/index.js';
import { outboxMigrations } from './outbox/sqlite/index.js';
import { driftMigrations } from './drift/sqlite/index.js';
import { postgresMigrations } from './storage.js';

describe('the storage the gateway serves on', () => {
  it('the PostgreSQL migrations have unique ids', () => {
    const ids = postgresMigrations.map((migration) => migration.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('the PostgreSQL migrations include the receipt log, the outbox and drift, under their SQLite ids', () => {
    const ids = new Set(postgresMigrations.map((migration) => migration.id));
    for (const migration of [...receiptMigrations, ...outboxMigrations, ...driftMigrations]) expect(ids).toContain(migration.id);
  });

  it('a gateway on SQLite never loads node-postgres (about 15 MB it would not use)', () => {
    const gateway = fileURLToPath(new URL('../dist/gateway.js', import.meta.url));
    const loaded = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { createRequire } from 'node:module'; await import(${JSON.stringify(gateway)});
         const cache = Object.keys(createRequire(import.meta.url).cache);
         process.stdout.write(String(cache.some((path) => /[\\\\/]node_modules[\\\\/]pg[\\\\/]/.test(path))));`,
      ],
      { encoding: 'utf8' },
    );
    expect(loaded).toBe('false');
  });
});
