import { describe, expect, it } from 'vitest';
import { twoConnectionsEachTest } from '../../test/support/databases.js';
import { PendingAuthorizations } from '../authorization/consent/pending.js';
import { BrowserSessions } from '../authorization/signin/browser-sessions.js';
import { SharedEphemeralStore, sharedStateMigrations } from './shared-state.js';

/** Two "workers": two connections to one database file, each with its own in-memory objects. */
const workers = twoConnectionsEachTest('gateway-shared-state-', sharedStateMigrations);

const COOKIE = { isHttps: false, lifetimeSeconds: 600 };
const client = {
  clientId: 'client-1',
  name: 'Client',
  redirectUris: ['http://127.0.0.1:9/cb'],
  registration: 'dynamic' as const,
  authMethod: 'none' as const,
};

describe('page state shared by workers', () => {
  it(
    'a browser session created in one worker is found by another through its cookie, and the database holds neither the cookie ' +
      'nor the CSRF token',
    () => {
      const a = new BrowserSessions(COOKIE, undefined, new SharedEphemeralStore(workers.first, 'browser-session'));
      const b = new BrowserSessions(COOKIE, undefined, new SharedEphemeralStore(workers.second, 'browser-session'));
      const created = a.create();
      const signedIn = a.signIn(created, { subject: 'local:alice', name: 'alice', via: 'local' });
      const cookie = `${a.cookieName}=${signedIn.id}`;
      const found = b.find(cookie);
      expect(found).toMatchObject({
        id: signedIn.id,
        browserId: created.browserId,
        csrfToken: signedIn.csrfToken,
        person: { name: 'alice' },
      });
      // The session id rotated at sign-in: the old cookie no longer names a session anywhere.
      expect(b.find(`${a.cookieName}=${created.id}`)).toBeUndefined();
      const rows = JSON.stringify(workers.first.prepare('SELECT * FROM shared_ephemeral').all());
      expect(rows).not.toContain(signedIn.id);
      expect(rows).not.toContain(signedIn.csrfToken);
      expect(rows).not.toContain('alice');
      // Signing out in the other worker ends it for both.
      b.signOut(found!);
      expect(a.find(cookie)).toBeUndefined();
    },
  );

  it('a pending authorization started in one worker is continued in another, and only one worker can decide it', () => {
    const a = new PendingAuthorizations(300, undefined, new SharedEphemeralStore(workers.first, 'pending-authorization'));
    const b = new PendingAuthorizations(300, undefined, new SharedEphemeralStore(workers.second, 'pending-authorization'));
    const added = a.add({
      client,
      redirectUri: 'http://127.0.0.1:9/cb',
      redirectUriParameter: 'http://127.0.0.1:9/cb',
      state: 's',
      codeChallenge: 'c'.repeat(43),
      resource: 'http://127.0.0.1:8080/mcp',
      browserId: 'browser-1',
    });
    if (typeof added === 'string') throw new Error(added);
    const seen = b.find(added.id)!;
    expect(seen).toMatchObject({ id: added.id, browserId: 'browser-1', isEngaged: false });
    seen.isEngaged = true;
    seen.shownTools = [];
    b.save(seen);
    expect(a.find(added.id)).toMatchObject({ isEngaged: true, shownTools: [] });
    expect(b.take(added.id)).toBe(true);
    expect(a.take(added.id)).toBe(false);
    expect(a.find(added.id)).toBeUndefined();
  });

  it('a single process keeps page state in memory only', () => {
    const sessions = new BrowserSessions(COOKIE);
    const pending = new PendingAuthorizations(300);
    sessions.create();
    pending.add({
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
