import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { assertServableStorage, POSTGRES_ADAPTERS, postgresMigrations, storesWithoutPostgresAdapter } from './storage.js';

const config = (storage?: { kind?: 'sqlite' | 'postgres'; url?: string }) => ({
  gateway: { url: 'http://127.0.0.1:8080' },
  sources: {},
  ...(storage ? { storage } : {}),
});

describe('the storage the gateway serves on', () => {
  it('SQLite serves; PostgreSQL is refused while a store has no adapter, naming every such store', () => {
    expect(() => assertServableStorage(config())).not.toThrow();
    expect(() => assertServableStorage(config({ kind: 'sqlite' }))).not.toThrow();
    const missing = storesWithoutPostgresAdapter();
    expect(missing.length).toBeGreaterThan(0);
    let refusal: (Error & { code?: string }) | undefined;
    try {
      assertServableStorage(config({ kind: 'postgres', url: 'database-url' }));
    } catch (error) {
      refusal = error as Error & { code?: string };
    }
    expect(refusal?.code).toBe('STORAGE_POSTGRES_INCOMPLETE');
    for (const stores of missing) expect(refusal?.message).toContain(stores);
    expect(POSTGRES_ADAPTERS.filter((entry) => entry.hasAdapter).length).toBeGreaterThan(0);
  });

  it('the PostgreSQL migrations have unique ids', () => {
    const ids = postgresMigrations.map((migration) => migration.id);
    expect(new Set(ids).size).toBe(ids.length);
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
