/**
 * The `postgres` vault on a real PostgreSQL (test-support/postgres.ts): the vault contract, what the table holds
 * (never a value), a wrong key and a renamed row refused with their codes, two replicas sharing one vault, key
 * rotation, and each misconfiguration with its code.
 */
import { randomBytes } from 'node:crypto';
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig, type LoadedConfig } from '@gateway/core';
import { temporaryDirectory } from '../../../../test-support/cli.js';
import { postgresForThisFile } from '../../../../test-support/postgres.js';
import { createVault, vaultIsWritable } from './index.js';
import { VAULT_TABLE } from './postgres-vault.js';
import type { Vault } from './vault.js';

const cluster = postgresForThisFile();

let directory: { path: string; cleanup: () => Promise<void> };
/** The vault's own database and role (never the superuser's): created fresh for each test. */
let vaultUrl: string;
const opened: Vault[] = [];
beforeEach(async () => {
  directory = await temporaryDirectory('gateway-pg-vault-');
  const suffix = `${process.pid}_${randomBytes(4).toString('hex')}`;
  const role = `vault_role_${suffix}`;
  const password = `pw-${randomBytes(9).toString('hex')}`;
  await cluster.server.psql(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
  await cluster.server.psql(`CREATE DATABASE vault_${suffix} OWNER ${role}`);
  vaultUrl = `postgres://${role}:${password}@127.0.0.1:${cluster.server.port}/vault_${suffix}`;
});
afterEach(async () => {
  for (const vault of opened.splice(0)) await vault.close?.();
  await directory.cleanup();
});

const KEY = randomBytes(32).toString('base64');
const OTHER_KEY = randomBytes(32).toString('base64');

function configWith(postgres = '    url: { env: VAULT_DB_URL }\n    key: { env: VAULT_KEK }\n'): LoadedConfig {
  return parseConfig(
    `gateway:\n  url: http://127.0.0.1:8080\nsources: {}\nvault:\n  provider: postgres\n  postgres:\n${postgres}`,
    join(directory.path, 'gateway.yaml'),
  );
}

async function open(env: NodeJS.ProcessEnv = {}, loaded = configWith()): Promise<Vault> {
  const vault = await createVault(loaded, { env: { PATH: process.env.PATH, VAULT_DB_URL: vaultUrl, VAULT_KEK: KEY, ...env } });
  opened.push(vault);
  return vault;
}

async function refusal(promise: Promise<unknown>): Promise<Error & { code: string }> {
  try {
    await promise;
  } catch (error) {
    return error as Error & { code: string };
  }
  throw new Error('expected a refusal');
}

/** Runs SQL on the vault's database as its role, as an operator (or an attacker with the database) would. */
async function sql<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: vaultUrl });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

describe('the postgres vault', () => {
  it('sets, gets, overwrites, lists and deletes, with metadata and versions', async () => {
    const vault = await open();
    expect(vault.provider).toBe('postgres');
    expect(vaultIsWritable(vault)).toBe(true);
    expect(await vault.get('api-key')).toBeUndefined();
    const first = await vault.set('api-key', 'first-value');
    expect(first).toMatchObject({ name: 'api-key', version: 1 });
    expect(await vault.get('api-key')).toBe('first-value');
    const second = await vault.set('api-key', 'second-value');
    expect(second.version).toBe(2);
    expect(second.createdAt).toBe(first.createdAt);
    expect(Date.parse(second.updatedAt)).toBeGreaterThanOrEqual(Date.parse(first.updatedAt));
    expect(await vault.get('api-key')).toBe('second-value');
    await vault.set('b/other', 'x');
    expect((await vault.list()).map((entry) => [entry.name, entry.version])).toEqual([
      ['api-key', 2],
      ['b/other', 1],
    ]);
    expect(await vault.delete('api-key')).toBe(true);
    expect(await vault.delete('api-key')).toBe(false);
    expect(await vault.get('api-key')).toBeUndefined();
    expect((await refusal(vault.set('-bad', 'x'))).code).toBe('VAULT_SECRET_NAME_INVALID');
    expect((await refusal(vault.set('empty', ''))).code).toBe('VAULT_SECRET_EMPTY');
  });

  it('the table never holds a value: not in clear, hex or base64, and each value has its own data key', async () => {
    const vault = await open();
    const canary = `canary-${randomBytes(12).toString('hex')}`;
    await vault.set('canary', canary);
    await vault.set('canary-twin', canary);
    const rows = await sql<{ row: string; wrapped_key: Buffer; sealed_value: Buffer; key_id: string }>(
      `SELECT t::text AS row, wrapped_key, sealed_value, key_id FROM ${VAULT_TABLE} t ORDER BY name`,
    );
    expect(rows).toHaveLength(2);
    const forms = [canary, Buffer.from(canary).toString('hex'), Buffer.from(canary).toString('base64')];
    for (const row of rows) {
      for (const form of forms) expect(row.row).not.toContain(form);
      expect(row.wrapped_key.includes(Buffer.from(canary))).toBe(false);
      expect(row.sealed_value.includes(Buffer.from(canary))).toBe(false);
      // Nor the key-encryption key.
      expect(row.row).not.toContain(Buffer.from(KEY, 'base64').toString('hex'));
    }
    expect(rows[0]!.wrapped_key.equals(rows[1]!.wrapped_key)).toBe(false);
    expect(rows[0]!.sealed_value.equals(rows[1]!.sealed_value)).toBe(false);
    expect(rows[0]!.key_id).toMatch(/^kek-[A-Za-z0-9_-]{16}$/);
  });

  it('a wrong key is refused with VAULT_KEY_INVALID naming the secret, never the value, and writes nothing under it', async () => {
    const vault = await open();
    await vault.set('orders-api-key', 'the-orders-value');
    const wrong = await open({ VAULT_KEK: OTHER_KEY });
    const error = await refusal(wrong.get('orders-api-key'));
    expect(error.code).toBe('VAULT_KEY_INVALID');
    expect(error.message).toContain("does not open the secret 'orders-api-key'");
    expect(error.message).not.toContain('the-orders-value');
    expect(error.message).not.toContain(OTHER_KEY);
    // A mistyped key on one replica must not split the vault: it stores nothing.
    expect((await refusal(wrong.set('new-one', 'v'))).code).toBe('VAULT_KEY_INVALID');
    expect((await sql(`SELECT name FROM ${VAULT_TABLE}`)).map((row) => row.name)).toEqual(['orders-api-key']);
    expect((await refusal(wrong.check!())).code).toBe('VAULT_KEY_INVALID');
  });

  it('a row renamed or moved in SQL does not open: VAULT_SECRET_ALTERED', async () => {
    const vault = await open();
    await vault.set('admin-token', 'admin-value');
    await vault.set('orders-api-key', 'orders-value');
    await sql(`UPDATE ${VAULT_TABLE} SET name = 'renamed' WHERE name = 'admin-token'`);
    const renamed = await refusal(vault.get('renamed'));
    expect(renamed.code).toBe('VAULT_SECRET_ALTERED');
    expect(renamed.message).toContain("the secret 'renamed' does not open under its key");
    expect(renamed.message).not.toContain('admin-value');
    // Another secret's ciphertext copied over this one's row.
    await sql(
      `UPDATE ${VAULT_TABLE} SET wrapped_key = o.wrapped_key, sealed_value = o.sealed_value FROM ${VAULT_TABLE} o ` +
        `WHERE ${VAULT_TABLE}.name = 'orders-api-key' AND o.name = 'renamed'`,
    );
    expect((await refusal(vault.get('orders-api-key'))).code).toBe('VAULT_SECRET_ALTERED');
  });

  it("two replicas share one vault: each sees the other's writes, and concurrent writes to one name all count", async () => {
    const first = await open();
    const second = await open();
    await first.set('person-login.abc', '{"accessToken":"t1"}');
    expect(await second.get('person-login.abc')).toBe('{"accessToken":"t1"}');
    await second.set('person-login.abc', '{"accessToken":"t2"}');
    expect(await first.get('person-login.abc')).toBe('{"accessToken":"t2"}');
    await Promise.all(Array.from({ length: 10 }, (_, index) => (index % 2 ? first : second).set('shared', `value-${index}`)));
    expect((await first.list()).find((entry) => entry.name === 'shared')?.version).toBe(10);
    expect(await second.get('shared')).toMatch(/^value-\d$/);
    expect(await second.delete('person-login.abc')).toBe(true);
    expect(await first.get('person-login.abc')).toBeUndefined();
  });

  it('concurrent creates of one name by two replicas (two pools) all return the value stored first, which get returns', async () => {
    const first = await open();
    const second = await open();
    const created = await Promise.all(
      Array.from({ length: 10 }, (_, index) => (index % 2 ? first : second).create('first-start-key', `value-${index}`)),
    );
    expect(new Set(created).size).toBe(1);
    expect(created[0]).toMatch(/^value-\d$/);
    expect(await first.get('first-start-key')).toBe(created[0]);
    expect(await second.get('first-start-key')).toBe(created[0]);
    // Stored once: the creates that found the name changed nothing.
    expect((await first.list()).find((entry) => entry.name === 'first-start-key')?.version).toBe(1);
    await first.set('kept', 'stored-before');
    expect(await second.create('kept', 'newer')).toBe('stored-before');
    expect(await first.get('kept')).toBe('stored-before');
    expect((await refusal(first.create('kept', ''))).code).toBe('VAULT_SECRET_EMPTY');
  });

  it('rotates its key: the new key seals, a previous key still opens what it sealed, doctor counts what is left', async () => {
    const old = await open();
    await old.set('kept', 'sealed-under-the-old-key');
    const keyFile = join(directory.path, 'old.key');
    await writeFile(keyFile, `${KEY}\n`, { mode: 0o600 });
    const rotated = await open(
      { VAULT_KEK: OTHER_KEY },
      configWith('    url: { env: VAULT_DB_URL }\n    key: { env: VAULT_KEK }\n    previousKeys: [{ file: old.key }]\n'),
    );
    expect(await rotated.get('kept')).toBe('sealed-under-the-old-key');
    await rotated.set('fresh', 'sealed-under-the-new-key');
    expect(await rotated.check!()).toContain('1 still under a previous key');
    expect((await refusal(old.get('fresh'))).code).toBe('VAULT_KEY_INVALID');
    await rotated.set('kept', 'sealed-under-the-old-key');
    expect(await rotated.check!()).not.toContain('previous key');
    expect(new Set((await sql<{ key_id: string }>(`SELECT key_id FROM ${VAULT_TABLE}`)).map((row) => row.key_id)).size).toBe(1);
  });

  it('works for a role that may only read and write the table its owner created', async () => {
    await (await open()).set('first', 'v1');
    const role = `vault_dml_${process.pid}_${randomBytes(3).toString('hex')}`;
    const database = new URL(vaultUrl).pathname.slice(1);
    await cluster.server.psql(`CREATE ROLE ${role} LOGIN PASSWORD 'dml-password'`);
    await sql(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
    await sql(`GRANT SELECT, INSERT, UPDATE, DELETE ON ${VAULT_TABLE} TO ${role}`);
    await cluster.server.psql(`GRANT CONNECT ON DATABASE ${database} TO ${role}`);
    const url = `postgres://${role}:dml-password@127.0.0.1:${cluster.server.port}/${database}`;
    const vault = await open({ VAULT_DB_URL: url });
    expect(await vault.get('first')).toBe('v1');
    expect((await vault.set('second', 'v2')).version).toBe(1);
    expect(await vault.create('second', 'not-stored')).toBe('v2');
    expect(await vault.create('third', 'v3')).toBe('v3');
  });
});

describe('the postgres vault misconfigured', () => {
  it('a missing, malformed or readable key: VAULT_KEY_MISSING, VAULT_KEY_INVALID, VAULT_KEY_PERMISSIONS', async () => {
    const missing = await refusal(open({ VAULT_KEK: '' }));
    expect(missing.code).toBe('VAULT_KEY_MISSING');
    expect(missing.message).toContain('vault.postgres.key (the environment variable VAULT_KEK) gave no key');
    expect((await refusal(open({ VAULT_KEK: 'c2hvcnQ=' }))).code).toBe('VAULT_KEY_INVALID');
    const keyFile = join(directory.path, 'kek.txt');
    await writeFile(keyFile, KEY);
    await chmod(keyFile, 0o644);
    const readable = configWith('    url: { env: VAULT_DB_URL }\n    key: { file: kek.txt }\n');
    expect((await refusal(open({}, readable))).code).toBe('VAULT_KEY_PERMISSIONS');
    await chmod(keyFile, 0o600);
    expect((await open({}, readable)).provider).toBe('postgres');
  });

  it('takes the connection string and key from commands; a failing command is VAULT_EXEC_FAILED without its output', async () => {
    const script = join(directory.path, 'print.sh');
    await writeFile(script, '#!/bin/sh\nif [ "$1" = fail ]; then echo "$VAULT_KEK" >&2; echo "$VAULT_KEK"; exit 3; fi\nprintf %s "$1"\n', {
      mode: 0o700,
    });
    const loaded = configWith(`    url: { exec: [./print.sh, '${vaultUrl}'] }\n    key: { exec: [./print.sh, '${KEY}'] }\n`);
    const vault = await open({}, loaded);
    await vault.set('from-commands', 'ok');
    expect(await vault.get('from-commands')).toBe('ok');
    const failing = configWith('    url: { env: VAULT_DB_URL }\n    key: { exec: [./print.sh, fail], timeoutMs: 5000 }\n');
    const error = await refusal(open({}, failing));
    expect(error.code).toBe('VAULT_EXEC_FAILED');
    expect(error.message).toContain('exited with code 3');
    expect(error.message).not.toContain(KEY);
  });

  it('a missing or malformed connection string: VAULT_DATABASE_URL_MISSING, VAULT_DATABASE_URL_INVALID (value not shown)', async () => {
    const missing = await refusal(open({ VAULT_DB_URL: '' }));
    expect(missing.code).toBe('VAULT_DATABASE_URL_MISSING');
    expect(missing.message).toContain('vault.postgres.url (the environment variable VAULT_DB_URL)');
    const invalid = await refusal(open({ VAULT_DB_URL: 'mysql://user:hunter2-secret@db/x' }));
    expect(invalid.code).toBe('VAULT_DATABASE_URL_INVALID');
    expect(invalid.message).not.toContain('hunter2-secret');
  });

  it('an unreachable database or a refused password: VAULT_DATABASE_UNREACHABLE naming host:port/database only', async () => {
    const url = new URL(vaultUrl);
    const closed = await refusal(open({ VAULT_DB_URL: `postgres://someone:closed-port-password@127.0.0.1:1/vaultdb` }));
    expect(closed.code).toBe('VAULT_DATABASE_UNREACHABLE');
    expect(closed.message).toContain('the vault database 127.0.0.1:1/vaultdb refused or did not answer');
    expect(closed.message).not.toContain('closed-port-password');
    url.password = 'a-wrong-password-value';
    const refused = await refusal(open({ VAULT_DB_URL: url.href }));
    expect(refused.code).toBe('VAULT_DATABASE_UNREACHABLE');
    expect(refused.message).toContain(`127.0.0.1:${cluster.server.port}${url.pathname}`);
    expect(refused.message).not.toContain('a-wrong-password-value');
  });
});
