/**
 * The per-person connections of an MCP source whose credential is `oauthPerson`, through the pool, against the
 * project's fixture MCP server on loopback (it records the headers of every request it receives).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '@gateway/core';
import { createVault } from '@gateway/runtime';
import { startFixtureMcpServer, type FixtureMcpServer } from '../../test/support/mcp-fixture-server.js';
import { McpUpstreamPool } from './mcp-upstream.js';

const logger = { info: () => undefined, warn: () => undefined };
const LISTING = 'listing-token-0123456789';

let fixture: FixtureMcpServer | undefined;
let pool: McpUpstreamPool | undefined;
afterEach(async () => {
  await pool?.close();
  await fixture?.close();
  pool = undefined;
  fixture = undefined;
});

/** A pool over the fixture with one per-person source; `tokens` says each person's current token. */
async function personPool(tokens: Map<string, string>, bounds: { max: number; idleMs: number }) {
  fixture = await startFixtureMcpServer();
  process.env.PERSONMCP_SECRET_LISTING = LISTING;
  const loaded = parseConfig(
    'gateway:\n  url: http://127.0.0.1:8080\n' +
      'network:\n  allowPrivateNetworks: [127.0.0.1/32]\nsources:\n' +
      `  fx:\n    kind: mcp\n    url: ${fixture.url}\n` +
      '    credentials: { type: oauthPerson, issuer: https://id.example.com, clientId: c, secret: s }\n' +
      '    listingCredentials: { type: bearer, secret: listing }\n',
    '/tmp/gateway.yaml',
  );
  // Per-person logins need the writable file vault (the config says so); the pool itself only reads `listing`.
  const vault = await createVault({
    ...loaded,
    config: { ...loaded.config, vault: { provider: 'env', env: { prefix: 'PERSONMCP_SECRET_' } } },
  });
  pool = new McpUpstreamPool({
    loaded,
    vault,
    logger,
    personConnections: bounds,
    personTokens: async (person, login) => {
      expect(login).toBe('fx/mcp');
      const token = tokens.get(person);
      if (!token) throw new Error(`no token for ${person}`);
      return { token, subject: `sub-of-${person}` };
    },
  });
  return pool;
}

/** The authorization headers of the requests the fixture received since `from`. */
const authorizationsSince = (from: number) => fixture!.requests.slice(from).map((headers) => headers.authorization);

describe('per-person MCP connections', () => {
  it("each call carries only its person's token, a refreshed token from then on, and the receipt's login", async () => {
    const tokens = new Map([
      ['alice', 'alice-token-aaaaaaaa'],
      ['bob', 'bob-token-bbbbbbbbbb'],
    ]);
    const upstream = await personPool(tokens, { max: 10, idleMs: 60_000 });
    for (const person of ['alice', 'bob', 'alice']) {
      const from = fixture!.requests.length;
      const logins: string[] = [];
      const result = await upstream.callTool('fx', 'stable', { n: 1 }, { person, onLogin: (login) => logins.push(login) });
      expect(result.structuredContent).toEqual({ result: 2 });
      expect(logins).toEqual([`fx/mcp sub=sub-of-${person}`]);
      expect(new Set(authorizationsSince(from))).toEqual(new Set([`Bearer ${tokens.get(person)}`]));
    }
    expect(upstream.personConnectionCount).toBe(2);
    tokens.set('alice', 'alice-token-refreshed');
    const from = fixture!.requests.length;
    await upstream.callTool('fx', 'stable', { n: 1 }, { person: 'alice' });
    expect(authorizationsSince(from)).toEqual(['Bearer alice-token-refreshed']);
    expect(upstream.personConnectionCount).toBe(2);
  }, 30_000);

  it("a call without a person is refused before anything is sent; listing uses the gateway's own listing token", async () => {
    const upstream = await personPool(new Map(), { max: 10, idleMs: 60_000 });
    const from = fixture!.requests.length;
    await expect(upstream.callTool('fx', 'stable', { n: 1 })).rejects.toMatchObject({ code: 'PERSON_LOGIN_NOT_LINKED' });
    expect(fixture!.requests.length).toBe(from);
    const listed = await upstream.listTools('fx');
    expect(listed.map((tool) => tool.name)).toContain('stable');
    expect(new Set(authorizationsSince(from))).toEqual(new Set([`Bearer ${LISTING}`]));
  }, 30_000);

  it('keeps at most `max` connections, closing the least recently used, and closes idle ones', async () => {
    const people = ['p1', 'p2', 'p3', 'p4'];
    const upstream = await personPool(new Map(people.map((person) => [person, `${person}-token-xxxxxxxx`])), { max: 2, idleMs: 1_000 });
    for (const person of people) {
      await upstream.callTool('fx', 'stable', { n: 1 }, { person });
      expect(upstream.personConnectionCount).toBeLessThanOrEqual(2);
    }
    // p1 was closed for room: its next call opens a connection again (a new initialize), with p1's token.
    const from = fixture!.requests.length;
    const result = await upstream.callTool('fx', 'stable', { n: 4 }, { person: 'p1' });
    expect(result.structuredContent).toEqual({ result: 5 });
    expect(new Set(authorizationsSince(from))).toEqual(new Set(['Bearer p1-token-xxxxxxxx']));
    const deadline = Date.now() + 5_000;
    while (upstream.personConnectionCount > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(upstream.personConnectionCount).toBe(0);
  }, 30_000);
});
