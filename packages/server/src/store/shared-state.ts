import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
// Named without ./sqlite/: the adapters there import this folder's ports, so this file must not import them back.
import type Database from 'better-sqlite3';

interface Migration {
  id: string;
  sql: string;
}

/**
 * Short-lived state of the sign-in and consent pages (pending authorizations, browser sessions) shared by
 * the worker processes of `gateway serve --workers N` through the database: a browser's next request may
 * reach another worker. A single process keeps this state in memory only (nothing written).
 */
export const sharedStateMigrations: Migration[] = [
  {
    id: 'shared-001',
    sql: `CREATE TABLE shared_ephemeral (
      kind TEXT NOT NULL,
      key TEXT NOT NULL,
      value TEXT NOT NULL,
      expires_at INTEGER NOT NULL,
      PRIMARY KEY (kind, key)
    );
    CREATE INDEX shared_ephemeral_expiry ON shared_ephemeral (expires_at);`,
  },
];

/** Rows of one kind, by key, until they expire. Expired rows are never returned and are purged on write. */
export class SharedEphemeralStore {
  private readonly statements;
  private readonly transaction;
  private writes = 0;

  constructor(
    database: Database.Database,
    private readonly kind: string,
  ) {
    this.transaction = database.transaction((work: () => unknown) => work());
    this.statements = {
      put: database.prepare(
        'INSERT INTO shared_ephemeral (kind, key, value, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT (kind, ' +
          'key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at',
      ),
      get: database.prepare('SELECT value FROM shared_ephemeral WHERE kind = ? AND key = ? AND expires_at > ?'),
      delete: database.prepare('DELETE FROM shared_ephemeral WHERE kind = ? AND key = ?'),
      purge: database.prepare('DELETE FROM shared_ephemeral WHERE expires_at <= ?'),
    };
  }

  put(key: string, value: string, expiresAt: number): void {
    this.statements.put.run(this.kind, key, value, expiresAt);
    this.writes += 1;
    if (this.writes % 100 === 0) this.statements.purge.run(Date.now());
  }

  get(key: string, now = Date.now()): string | undefined {
    return (this.statements.get.get(this.kind, key, now) as { value: string } | undefined)?.value;
  }

  /** Runs `work` in one write transaction (`BEGIN IMMEDIATE`): no other worker changes a row in between. */
  atomically<R>(work: () => R): R {
    return this.transaction.immediate(work) as R;
  }

  /** True when this call removed the row (so exactly one worker wins a single-use take). */
  delete(key: string): boolean {
    return this.statements.delete.run(this.kind, key).changes > 0;
  }
}

/**
 * A value only the holder of `secret` can read: the row is named by sha256(secret) and sealed with
 * AES-256-GCM under a key derived from it (HKDF). A browser session's row thus holds nothing usable without
 * the browser's cookie — the database never holds a sign-in credential or CSRF token in the clear.
 */
export function sealedKey(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url');
}

function keyFor(secret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, 'gateway-shared-ephemeral', 'browser-session', 32));
}

export function seal(secret: string, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyFor(secret), iv);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [iv, cipher.getAuthTag(), body].map((part) => part.toString('base64url')).join('.');
}

export function unseal(secret: string, sealed: string): string | undefined {
  try {
    const [iv, tag, body] = sealed.split('.').map((part) => Buffer.from(part, 'base64url'));
    const decipher = createDecipheriv('aes-256-gcm', keyFor(secret), iv!);
    decipher.setAuthTag(tag!);
    return Buffer.concat([decipher.update(body!), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}
