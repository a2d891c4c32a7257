import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { temporaryDirectory } from '../../../test-support/cli.js';
import { cacheSeconds } from '../src/authorization/oauth/client-metadata-document.js';
import {
  approve,
  authorizeUrl,
  makeTestCertificates,
  pkce,
  startAuthorizationServer,
  startMetadataHost,
  tokenRequest,
  type TestAuthorizationServer,
} from './oauth-support/authorization-server.js';

const REDIRECT = 'http://127.0.0.1:9/callback';

let server: TestAuthorizationServer;
let host: Awaited<ReturnType<typeof startMetadataHost>>;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  const temporary = await temporaryDirectory('gateway-cimd-');
  cleanup = temporary.cleanup;
  const tls = await makeTestCertificates(temporary.path);
  host = await startMetadataHost(tls);
  server = await startAuthorizationServer({ caCertificates: [tls.ca], authYaml: 'clientMetadata:\n  maxBytes: 2048' });
});
afterAll(async () => {
  await server?.close();
  await host?.close();
  await cleanup?.();
});

function publish(path: string, document: Record<string, unknown> | string, headers?: Record<string, string>): string {
  const clientId = `${host.origin}${path}`;
  const body = typeof document === 'string' ? document : JSON.stringify({ client_id: clientId, ...document });
  host.documents.set(path, { body, ...(headers ? { headers } : {}) });
  return clientId;
}

async function authorize(clientId: string, redirectUri = REDIRECT): Promise<Response> {
  return fetch(authorizeUrl(server, { clientId, redirectUri, challenge: pkce().challenge, method: 'S256' }), { redirect: 'manual' });
}

describe('client ID metadata documents', () => {
  it('a client identified by its https metadata document completes the code flow', async () => {
    const clientId = publish('/clients/editor.json', { client_name: 'Test Editor', redirect_uris: [REDIRECT] });
    const { verifier, challenge } = pkce();
    const location = await approve(server, { clientId, redirectUri: REDIRECT, challenge, method: 'S256' }, { tools: ['search_orders'] });
    const tokens = await tokenRequest(server.issuer, {
      grant_type: 'authorization_code',
      code: location.searchParams.get('code')!,
      code_verifier: verifier,
      client_id: clientId,
      redirect_uri: REDIRECT,
    });
    expect(tokens.status).toBe(200);
    const session = (await server.store.listSessions()).at(-1)!;
    expect(session.clientId).toBe(clientId);
    expect(session.clientName).toBe('Test Editor');
  });

  it('a document whose client_id is not its own URL is refused on the gateway page', async () => {
    const clientId = `${host.origin}/clients/impostor.json`;
    host.documents.set('/clients/impostor.json', {
      body: JSON.stringify({ client_id: 'https://real.example/client.json', client_name: 'X', redirect_uris: [REDIRECT] }),
    });
    const response = await authorize(clientId);
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(await response.text()).toContain('is not the URL it was fetched from');
  });

  it('a redirect URI not listed in the document is refused on the gateway page', async () => {
    const clientId = publish('/clients/strict.json', { client_name: 'Strict', redirect_uris: ['http://127.0.0.1:9/callback'] });
    const response = await authorize(clientId, 'http://127.0.0.1:9/stolen');
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
  });

  it('documents missing client_name or redirect_uris, or over the size limit, are refused', async () => {
    expect((await authorize(publish('/clients/no-name.json', { redirect_uris: [REDIRECT] }))).status).toBe(400);
    expect((await authorize(publish('/clients/no-redirects.json', { client_name: 'N' }))).status).toBe(400);
    const big = publish('/clients/big.json', { client_name: 'B', redirect_uris: [REDIRECT], padding: 'x'.repeat(4096) });
    const response = await authorize(big);
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('larger than 2048 bytes');
  });

  it('a document is cached per max-age, and no-store is fetched every time', async () => {
    const cached = publish(
      '/clients/cached.json',
      { client_name: 'Cached', redirect_uris: [REDIRECT] },
      { 'cache-control': 'max-age=600' },
    );
    await authorize(cached);
    await authorize(cached);
    expect(host.hits.get('/clients/cached.json')).toBe(1);
    const fresh = publish('/clients/fresh.json', { client_name: 'Fresh', redirect_uris: [REDIRECT] }, { 'cache-control': 'no-store' });
    await authorize(fresh);
    await authorize(fresh);
    expect(host.hits.get('/clients/fresh.json')).toBe(2);
  });

  it('a certificate the gateway does not trust is refused', async () => {
    const untrusting = await startAuthorizationServer();
    try {
      const clientId = publish('/clients/untrusted.json', { client_name: 'U', redirect_uris: [REDIRECT] });
      const response = await fetch(
        authorizeUrl(untrusting, { clientId, redirectUri: REDIRECT, challenge: pkce().challenge, method: 'S256' }),
        { redirect: 'manual' },
      );
      expect(response.status).toBe(400);
      expect(await response.text()).toContain('could not be fetched');
    } finally {
      await untrusting.close();
    }
  });

  it('cache lifetimes follow Cache-Control within the configured bound', () => {
    expect(cacheSeconds({ 'cache-control': 'public, max-age=120' }, 3600, 300)).toBe(120);
    expect(cacheSeconds({ 'cache-control': 'max-age=999999' }, 3600, 300)).toBe(3600);
    expect(cacheSeconds({ 'cache-control': 'no-cache' }, 3600, 300)).toBe(0);
    expect(cacheSeconds({}, 3600, 300)).toBe(300);
  });
});
