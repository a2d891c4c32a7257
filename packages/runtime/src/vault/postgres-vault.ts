/**
 * The `postgres` vault: secrets several replicas share, in a PostgreSQL database and role of their own (never the
 * gateway's database, which holds no secret), each value envelope-encrypted (envelope.ts) under a key-encryption
 * key that is in no database. Names and metadata (version, created, updated) are in clear, as in the file vault, so
 * `list` needs no key; values never are.
 *
 * The vault's one table is created when missing (under a transaction-scoped advisory lock, so replicas starting
 * together create it once), not by the gateway's migrations: it lives in another database, which the CLI opens
 * too, and each row carries its format number, so a later format can be read beside this one.
 */
import pg from 'pg';
import { compareText, GatewayError } from '@gateway/core';
import { describeDatabase, withoutPassword } from '../database-location.js';
import { inTransaction } from '../postgres-transaction.js';
import { openEnvelope, sealEnvelope, type KeyEncryptionKey } from './envelope.js';
import { checkSecretToStore } from './file-vault.js';
import type { SecretMetadata, Vault } from './vault.js';

export const VAULT_TABLE = 'gateway_vault_secrets';
/** The row format this version writes: AES-256-GCM envelope v1 (envelope.ts). */
const FORMAT = 1;
/** pg_advisory_xact_lock key of the table's creation (0x67772d7661756c74, the ASCII of "gw-vault"). */
const CREATE_LOCK_KEY = '7455477694599621748';

export interface PostgresVaultOptions {
  connectionString: string;
  /** The key new values are sealed under, first; then earlier keys, which still open what they sealed. */
  keys: readonly [KeyEncryptionKey, ...KeyEncryptionKey[]];
  /** How long opening a connection may take (default 5000 ms). */
  connectTimeoutMs?: number;
}

export interface PostgresVault extends Vault {
  readonly provider: 'postgres';
  close(): Promise<void>;
}

interface Row {
  name: string;
  format: number;
  key_id: string;
  wrapped_key: Buffer;
  sealed_value: Buffer;
  version: number;
  created_at: Date;
  updated_at: Date;
}

function metadataOf(row: Pick<Row, 'name' | 'version' | 'created_at' | 'updated_at'>): SecretMetadata {
  return { name: row.name, createdAt: row.created_at.toISOString(), updatedAt: row.updated_at.toISOString(), version: row.version };
}

/** Opens the pool, checks the database answers and creates the table when missing. */
export async function openPostgresVault(options: PostgresVaultOptions): Promise<PostgresVault> {
  const where = describeDatabase(options.connectionString);
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: 4,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
    application_name: 'gateway-vault',
    // A CLI command exits once its work is done, without waiting for idle connections to time out.
    allowExitOnIdle: true,
  });
  // Without a listener an idle client's error (the server restarted) would crash the process; the next query reconnects.
  pool.on('error', () => undefined);
  const [current] = options.keys;
  let keyChecked = false;

  const failed = (error: unknown): GatewayError => {
    if (error instanceof GatewayError) return error;
    const reason = withoutPassword(error instanceof Error ? error.message : String(error), options.connectionString);
    return new GatewayError('VAULT_DATABASE_UNREACHABLE', `the vault database ${where} refused or did not answer: ${reason}`, {
      cause: error,
    });
  };
  const query = async <R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> => {
    try {
      return await pool.query<R>(text, values);
    } catch (error) {
      throw failed(error);
    }
  };

  /** Refuses to write under a key that opens none of the stored values: a mistyped key would split the vault in two. */
  async function checkKeyBeforeWriting(): Promise<void> {
    if (keyChecked) return;
    const { rows } = await query<{ stored: boolean; known: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM ${VAULT_TABLE}) AS stored, EXISTS (SELECT 1 FROM ${VAULT_TABLE} WHERE key_id = ANY($1)) AS known`,
      [options.keys.map((key) => key.id)],
    );
    if (rows[0]!.stored && !rows[0]!.known) {
      throw new GatewayError(
        'VAULT_KEY_INVALID',
        `the vault key ${current.id} opens none of the secrets in the vault database ${where}: refusing to store a value under it ` +
          '(check vault.postgres.key; a new key goes in with the old one listed under vault.postgres.previousKeys)',
      );
    }
    keyChecked = true;
  }

  function openRow(name: string, row: Pick<Row, 'format' | 'key_id' | 'wrapped_key' | 'sealed_value'>): string {
    if (row.format !== FORMAT) {
      throw new GatewayError(
        'VAULT_SECRET_ALTERED',
        `the secret '${name}' is stored in format ${row.format}, which this gateway version does not read`,
        { details: { secret: name } },
      );
    }
    return openEnvelope(options.keys, name, { keyId: row.key_id, wrappedKey: row.wrapped_key, sealedValue: row.sealed_value });
  }

  try {
    await createTableIfMissing(pool);
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw failed(error);
  }

  return {
    provider: 'postgres',
    location: where,

    async get(name) {
      const { rows } = await query<Row>(`SELECT name, format, key_id, wrapped_key, sealed_value FROM ${VAULT_TABLE} WHERE name = $1`, [
        name,
      ]);
      const row = rows[0];
      return row ? openRow(name, row) : undefined;
    },

    async set(name, value) {
      checkSecretToStore(name, value);
      await checkKeyBeforeWriting();
      const envelope = sealEnvelope(current, name, value);
      // One statement: two replicas writing one name at once each bump the version once, neither loses the row.
      const { rows } = await query<Row>(
        `INSERT INTO ${VAULT_TABLE} AS s (name, format, key_id, wrapped_key, sealed_value, version, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, 1, clock_timestamp(), clock_timestamp())
         ON CONFLICT (name) DO UPDATE SET format = EXCLUDED.format, key_id = EXCLUDED.key_id, wrapped_key = EXCLUDED.wrapped_key,
           sealed_value = EXCLUDED.sealed_value, version = s.version + 1, updated_at = clock_timestamp()
         RETURNING name, version, created_at, updated_at`,
        [name, FORMAT, envelope.keyId, envelope.wrappedKey, envelope.sealedValue],
      );
      return metadataOf(rows[0]!);
    },

    async create(name, value) {
      checkSecretToStore(name, value);
      await checkKeyBeforeWriting();
      const envelope = sealEnvelope(current, name, value);
      // One statement, on the primary key: of replicas creating one name at once, one row goes in; the others wait
      // for it to commit and get it back from the no-op update (DO NOTHING would return nothing, and a read after it
      // could find the name deleted in between), so every caller returns the one stored value.
      const { rows } = await query<Row>(
        `INSERT INTO ${VAULT_TABLE} AS s (name, format, key_id, wrapped_key, sealed_value, version, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, 1, clock_timestamp(), clock_timestamp())
         ON CONFLICT (name) DO UPDATE SET name = s.name
         RETURNING name, format, key_id, wrapped_key, sealed_value`,
        [name, FORMAT, envelope.keyId, envelope.wrappedKey, envelope.sealedValue],
      );
      return openRow(name, rows[0]!);
    },

    async delete(name) {
      const { rowCount } = await query(`DELETE FROM ${VAULT_TABLE} WHERE name = $1`, [name]);
      return (rowCount ?? 0) > 0;
    },

    async list() {
      const { rows } = await query<Row>(`SELECT name, version, created_at, updated_at FROM ${VAULT_TABLE}`);
      return rows.map(metadataOf).sort((a, b) => compareText(a.name, b.name));
    },

    async check() {
      const { rows } = await query<{ key_id: string; secrets: number }>(
        `SELECT key_id, count(*)::int AS secrets FROM ${VAULT_TABLE} GROUP BY key_id ORDER BY key_id`,
      );
      const known = new Set(options.keys.map((key) => key.id));
      const unknown = rows.filter((row) => !known.has(row.key_id));
      if (unknown.length > 0) {
        throw new GatewayError(
          'VAULT_KEY_INVALID',
          `the vault key does not open ${unknown.reduce((sum, row) => sum + row.secrets, 0)} secret(s) in ${where}: sealed under ` +
            `${unknown.map((row) => row.key_id).join(', ')}, while the configured keys are ${[...known].join(', ')}`,
        );
      }
      const total = rows.reduce((sum, row) => sum + row.secrets, 0);
      const underPrevious = rows.filter((row) => row.key_id !== current.id).reduce((sum, row) => sum + row.secrets, 0);
      return (
        `${total} secret(s) in ${where} under key ${current.id}` +
        (underPrevious > 0 ? ` (${underPrevious} still under a previous key: \`gateway secrets set\` them again to move them)` : '')
      );
    },

    async close() {
      await pool.end();
    },
  };
}

async function createTableIfMissing(pool: pg.Pool): Promise<void> {
  const { rows } = await pool.query<{ present: boolean }>(`SELECT to_regclass('${VAULT_TABLE}') IS NOT NULL AS present`);
  // A role granted only SELECT, INSERT, UPDATE and DELETE on a table its owner created never needs CREATE.
  if (rows[0]!.present) return;
  await inTransaction(pool, async (client) => {
    await client.query(`SELECT pg_advisory_xact_lock(${CREATE_LOCK_KEY})`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${VAULT_TABLE} (
         name TEXT PRIMARY KEY,
         format SMALLINT NOT NULL,
         key_id TEXT NOT NULL,
         wrapped_key BYTEA NOT NULL,
         sealed_value BYTEA NOT NULL,
         version INTEGER NOT NULL,
         created_at TIMESTAMPTZ NOT NULL,
         updated_at TIMESTAMPTZ NOT NULL
       )`,
    );
  });
}
