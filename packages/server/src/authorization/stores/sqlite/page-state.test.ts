import { describe, expect, it } from 'vitest';
import { twoConnectionsEachTest } from '../../../../test/support/databases.js';
import { PendingAuthorizations } from '../../consent/pending.js';
import { BrowserSessions } from '../../signin/browser-sessions.js';
import { authorizationMigrations, openSqliteAuthorizationStores } from './index.js';

/** Two "workers": two connections to one database file, each with its own in-memory objects. */
const workers = twoConnectionsEachTest('gateway-shared-state-', authorizationMigrations);

const COOKIE = { isHttps: false, lifetimeSeconds: 600 };
const client = {
  clientId: 'client-1',
  name: 'Client',
  redirectUris: ['http://127.0.0.1:9/cb'],
  registration: 'dynamic' as const,
  authMethod: 'none' as const,
};
const shared = (database: typeof workers.first) => openSqliteAuthorizationStores(database, { sharedByWorkers: true }).ephemeral;

describe('page state shared by workers', () => {
  it(
    'a browser session created in one worker is found by another through its cookie, and the database holds neither the cookie ' +
      'nor the CSRF token',
    async () => {
      const a = new BrowserSessions(COOKIE, shared(workers.first));
      const b = new BrowserSessions(COOKIE, shared(workers.second));
      const created = await a.create();
      const signedIn = await a.signIn(created, { subject: 'local:alice', name: 'alice', via: 'local' });
      const cookie = `${a.cookieName}=${signedIn.id}`;
      const found = await b.find(cookie);
      expect(found).toMatchObject({
        id: signedIn.id,
        browserId: created.browserId,
        csrfToken: signedIn.csrfToken,
        person: { name: 'alice' },
      });
      // The session id rotated at sign-in: the old cookie no longer names a session anywhere.
      expect(await b.find(`${a.cookieName}=${created.id}`)).toBeUndefined();
      const rows = JSON.stringify(workers.first.prepare('SELECT * FROM shared_ephemeral').all());
      expect(rows).not.toContain(signedIn.id);
      expect(rows).not.toContain(signedIn.csrfToken);
      expect(rows).not.toContain('alice');
      // Signing out in the other worker ends it for both.
      await b.signOut(found!);
      expect(await a.find(cookie)).toBeUndefined();
    },
  );

  it('a pending authorization started in one worker is continued in another, and only one worker can decide it', async () => {
    const a = new PendingAuthorizations(300, shared(workers.first));
    const b = new PendingAuthorizations(300, shared(workers.second));
    const added = await a.add({
      client,
      redirectUri: 'http://127.0.0.1:9/cb',
      redirectUriParameter: 'http://127.0.0.1:9/cb',
      state: 's',
      codeChallenge: 'c'.repeat(43),
      resource: 'http://127.0.0.1:8080/mcp',
      browserId: 'browser-1',
    });
    if (typeof added === 'string') throw new Error(added);
    const seen = (await b.find(added.id))!;
    expect(seen).toMatchObject({ id: added.id, browserId: 'browser-1', isEngaged: false });
    seen.isEngaged = true;
    seen.shownTools = [];
    await b.save(seen);
    expect(await a.find(added.id)).toMatchObject({ isEngaged: true, shownTools: [] });
    expect(await b.take(added.id)).toBe(true);
    expect(await a.take(added.id)).toBe(false);
    expect(await a.find(added.id)).toBeUndefined();
  });

  it('a pending authorization decided twice at once, in two workers, is decided once', async () => {
    const a = new PendingAuthorizations(300, shared(workers.first));
    const b = new PendingAuthorizations(300, shared(workers.second));
    const added = await a.add({
      client,
      redirectUri: 'http://127.0.0.1:9/cb',
      redirectUriParameter: '',
      state: null,
      codeChallenge: 'c'.repeat(43),
      resource: 'r',
      browserId: 'b',
    });
    if (typeof added === 'string') throw new Error(added);
    const decisions = await Promise.all([a.take(added.id), b.take(added.id), a.take(added.id), b.take(added.id)]);
    expect(decisions.filter(Boolean)).toHaveLength(1);
  });

  it('a single process keeps page state in memory only', async () => {
    const { ephemeral } = openSqliteAuthorizationStores(workers.first);
    const sessions = new BrowserSessions(COOKIE, ephemeral);
    const pending = new PendingAuthorizations(300, ephemeral);
    await sessions.create();
    await pending.add({
      client,
      redirectUri: 'http://127.0.0.1:9/cb',
      redirectUriParameter: '',
      state: null,
      codeChallenge: 'c'.repeat(43),
      resource: 'r',
      browserId: 'b',
    });
    expect(workers.first.prepare('SELECT count(*) AS n FROM shared_ephemeral').get()).toEqual({ n: 0 });
  });
});
