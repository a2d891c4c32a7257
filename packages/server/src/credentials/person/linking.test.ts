/**
 * Linking across processes: two person-login services, built as two processes (`serve --workers`, replicas) build
 * them, over one database's ephemeral state. A provider's callback that reaches the other process finishes the
 * link, and a connect ticket spent in one is refused in the other. On SQLite (two connections to one file) and on
 * PostgreSQL (two pools on one database).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig, type LoadedConfig } from '@gateway/core';
import { createVault, type Vault } from '@gateway/runtime';
import { temporaryDirectory } from '../../../../../test-support/cli.js';
import { postgresForThisFile } from '../../../../../test-support/postgres.js';
import { freshPostgresDatabase } from '../../../test/support/databases.js';
import type { EphemeralState } from '../../store/ephemeral-state.js';
import { openPostgres } from '../../store/postgres/database.js';
import { postgresEphemeralState, postgresEphemeralStateMigrations } from '../../store/postgres/ephemeral-state.js';
import { openDatabase } from '../../store/sqlite/database.js';
import { ephemeralStateMigrations, SqliteEphemeralState } from '../../store/sqlite/ephemeral-state.js';
import { createPersonLogins, startPersonLogins, type LinkedAccounts, type PersonLogins } from './index.js';
import { postgresLinkedAccountMigrations, postgresLinkedAccounts } from './postgres/index.js';
import { linkedAccountMigrations, sqliteLinkedAccounts } from './sqlite/index.js';
import { readTokens } from './token-vault.js';

const LOGIN = 'orders/oauth';
const PERSON = 'local:alice';
const postgres = postgresForThisFile();

const closers: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/**
 * The customer's provider on loopback: discovery, an authorization endpoint that sends the browser straight back
 * with a code, a token endpoint that redeems it only with the PKCE verifier of its challenge (RFC 7636 §4.6), and
 * userinfo answering the account's `sub`.
 */
async function loopbackProvider() {
  const codes = new Map<string, string>();
  const server = createServer((request, response) => {
    const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const url = new URL(request.url ?? '/', issuer);
    const json = (status: number, body: object) =>
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (url.pathname.startsWith('/.well-known/')) {
      return json(200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        userinfo_endpoint: `${issuer}/userinfo`,
        response_types_supported: ['code'],
        code_challenge_methods_supported: ['S256'],
      });
    }
    if (url.pathname === '/authorize') {
      const code = randomBytes(16).toString('base64url');
      codes.set(code, url.searchParams.get('code_challenge') ?? '');
      const back = new URL(url.searchParams.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', url.searchParams.get('state') ?? '');
      return response.writeHead(302, { location: back.href }).end();
    }
    if (url.pathname === '/userinfo') return json(200, { sub: 'alice-at-provider' });
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const form = new URLSearchParams(body);
      const challenge = codes.get(form.get('code') ?? '');
      codes.delete(form.get('code') ?? '');
      const verified = createHash('sha256')
        .update(form.get('code_verifier') ?? '')
        .digest('base64url');
      if (challenge === undefined || challenge !== verified) return json(400, { error: 'invalid_grant' });
      json(200, { access_token: 'at-alice', token_type: 'Bearer', expires_in: 3600, refresh_token: 'rt-alice', scope: 'orders:read' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

interface Storage {
  /** One process's ports over the shared database. */
  process(): { ephemeral: EphemeralState; accounts: LinkedAccounts };
  /** The values of the link attempts the database holds, as stored. */
  storedAttempts(): Promise<string[]>;
}

async function sqliteStorage(): Promise<Storage> {
  const directory = await temporaryDirectory('gateway-linking-');
  closers.push(() => directory.cleanup());
  const open = () => {
    const database = openDatabase(join(directory.path, 'gateway.db'), [...ephemeralStateMigrations, ...linkedAccountMigrations]);
    closers.push(() => database.close());
    return database;
  };
  const reader = open();
  return {
    process() {
      const database = open();
      return { ephemeral: new SqliteEphemeralState(database), accounts: sqliteLinkedAccounts(database) };
    },
    storedAttempts: async () =>
      (reader.prepare("SELECT value FROM shared_ephemeral WHERE kind = 'link-attempt'").all() as Array<{ value: string }>).map(
        (row) => row.value,
      ),
  };
}

async function postgresStorage(): Promise<Storage> {
  const database = await freshPostgresDatabase(postgres.server, [...postgresEphemeralStateMigrations, ...postgresLinkedAccountMigrations]);
  closers.push(() => database.close());
  return {
    process() {
      const pool = openPostgres(database.url, { max: 3 });
      closers.push(() => pool.end());
      return { ephemeral: postgresEphemeralState(pool), accounts: postgresLinkedAccounts(pool) };
    },
    storedAttempts: async () =>
      (await database.pool.query<{ value: string }>("SELECT value FROM shared_ephemeral WHERE kind = 'link-attempt'")).rows.map(
        (row) => row.value,
      ),
  };
}

/** A config with one per-person login at a loopback provider, in a fresh directory (its file vault in there). */
async function personLoginConfig(): Promise<LoadedConfig> {
  const issuer = await loopbackProvider();
  const directory = await temporaryDirectory('gateway-linking-config-');
  closers.push(() => directory.cleanup());
  return parseConfig(
    [
      'gateway:',
      '  url: http://127.0.0.1:8080',
      'sources:',
      '  orders:',
      '    kind: openapi',
      '    document: x.yaml',
      '    credentials:',
      `      oauth: { type: oauthPerson, issuer: "${issuer}", clientId: gateway, secret: client-secret, scopes: ["orders:read"] }`,
      '',
    ].join('\n'),
    join(directory.path, 'gateway.yaml'),
  );
}

/** Two processes' person logins over `storage`, one file vault (as workers share it) and one ticket key. */
async function twoProcesses(storage: Storage): Promise<{ first: PersonLogins; second: PersonLogins; vault: Vault; loaded: LoadedConfig }> {
  const loaded = await personLoginConfig();
  const vault = await createVault(loaded, { env: {} });
  await vault.set('client-secret', 'a client secret');
  const ticketKey = randomBytes(32);
  const build = () => createPersonLogins({ loaded, vault, ...storage.process(), ticketKey, warn: () => undefined });
  return { first: build(), second: build(), vault, loaded };
}

const browser = { browserId: 'browser-1', person: PERSON };

/** The ticket of a connect URL. */
function ticketOf(connectUrl: string): string {
  return new URL(connectUrl).searchParams.get('ticket')!;
}

/** Opens the ticket in `process` and follows the provider's redirect: the callback URL it sends the browser to. */
async function startLinking(process: PersonLogins, ticket: string): Promise<URL> {
  const started = await process.linking.begin(ticket, browser);
  if (started.kind !== 'redirect') throw new Error(`expected a redirect to the provider, got ${JSON.stringify(started)}`);
  const atProvider = await fetch(started.location, { redirect: 'manual' });
  return new URL(atProvider.headers.get('location')!);
}

describe.each([
  ['SQLite', sqliteStorage],
  ['PostgreSQL', postgresStorage],
])('linking across processes (%s)', (_adapter, storageOf) => {
  it("linking started in one process is finished by the provider's callback reaching another", async () => {
    const storage = await storageOf();
    const { first, second, vault } = await twoProcesses(storage);
    const ticket = ticketOf(first.connectUrl({ person: PERSON, login: LOGIN, session: 'session-1' }));
    const callback = await startLinking(first, ticket);
    // The attempt is in the database under the hash of its state, sealed: neither its state nor its verifier readable.
    const stored = await storage.storedAttempts();
    expect(stored).toHaveLength(1);
    expect(stored[0]).not.toContain('codeVerifier');
    expect(stored[0]).not.toContain(callback.searchParams.get('state'));

    const outcome = await second.linking.complete(callback, browser);
    expect(outcome).toMatchObject({ kind: 'linked', account: { person: PERSON, login: LOGIN, subject: 'alice-at-provider' } });
    expect((await readTokens(vault, PERSON, LOGIN))?.accessToken).toBe('at-alice');
    expect(await storage.storedAttempts()).toEqual([]);
    // The callback is single use across the processes.
    expect(await first.linking.complete(callback, browser)).toMatchObject({ kind: 'refused', title: 'This link attempt has expired' });
  });

  it('a ticket spent in one process is refused in another', async () => {
    const storage = await storageOf();
    const { first, second } = await twoProcesses(storage);
    const ticket = ticketOf(first.connectUrl({ person: PERSON, login: LOGIN, session: 'session-1' }));
    expect(await first.linking.complete(await startLinking(first, ticket), browser)).toMatchObject({ kind: 'linked' });
    const used = { kind: 'refused', status: 400, title: 'This link was already used' };
    expect(await second.linking.begin(ticket, browser)).toMatchObject(used);
    expect(await second.linking.providerOf(ticket)).toBeUndefined();
    // Two attempts opened before the ticket was spent: the one finished first spends it, in whichever process.
    const again = ticketOf(second.connectUrl({ person: PERSON, login: LOGIN, session: 'session-2' }));
    const [inFirst, inSecond] = [await startLinking(first, again), await startLinking(second, again)];
    expect(await second.linking.complete(inFirst, browser)).toMatchObject({ kind: 'linked' });
    expect(await first.linking.complete(inSecond, browser)).toMatchObject(used);
  });
});

describe('the connect-ticket key', () => {
  it('processes starting together on an empty vault file create one: a ticket one issues opens in the others', async () => {
    const storage = await sqliteStorage();
    const loaded = await personLoginConfig();
    await (await createVault(loaded, { env: {} })).set('client-secret', 'a client secret');
    // Each process opens the vault file itself, as the workers of `serve --workers` do.
    const vaults = await Promise.all([1, 2, 3].map(() => createVault(loaded, { env: {} })));
    const processes = await Promise.all(
      vaults.map(async (vault) => (await startPersonLogins({ loaded, vault, ...storage.process(), warn: () => undefined }))!),
    );
    for (const issuing of processes) {
      const ticket = ticketOf(issuing.connectUrl({ person: PERSON, login: LOGIN, session: 'session-1' }));
      for (const opening of processes) expect(await opening.linking.providerOf(ticket)).toMatchObject({ label: expect.any(String) });
    }
  });
});
