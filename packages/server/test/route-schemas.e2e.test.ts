/**
 * Every HTTP route of a gateway with every area on (the authorization server with local accounts and OIDC sign-in,
 * the admin API with receipts, webhooks and drift, /mcp, health) declares a Fastify schema, and a request a
 * schema refuses is answered as problem+json with a registered code, while /mcp still answers JSON-RPC shapes
 * itself.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { allowAll, HARNESS_ADMIN_TOKEN, prepareWorkspace, type Workspace } from './support/harness.js';
import { newWebhookSecret } from './support/webhook-receiver.js';

let workspace: Workspace;
let gateway: RunningGateway;
const admin = { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` };

beforeAll(async () => {
  workspace = await prepareWorkspace({
    driftIntervalSeconds: 3600,
    configExtra: [
      'auth:',
      '  oidc:',
      '    issuer: http://127.0.0.1:9/provider',
      '    clientId: gateway',
      '    clientSecret: oidc-client-secret',
      'webhooks:',
      '  audit:',
      '    url: http://127.0.0.1:9/hook',
      '    secret: audit-webhook-secret',
    ].join('\n'),
  });
  Object.assign(workspace.env, {
    GATEWAY_SECRET_AUDIT_WEBHOOK_SECRET: newWebhookSecret(),
    GATEWAY_SECRET_OIDC_CLIENT_SECRET: 'a-client-secret',
  });
  gateway = await startGateway({
    configPath: workspace.configPath,
    lockPath: workspace.lockPath,
    env: workspace.env,
    logger: pino({ level: 'silent' }),
    shutdownGraceMs: 1_000,
    authorizerOverride: allowAll(new Set(['orders/api_key'])),
  });
});

afterAll(async () => {
  await gateway?.close();
  await workspace?.cleanup();
});

describe('route schemas', () => {
  it('every registered route declares a schema (params, querystring, body, headers or response)', () => {
    const routes = gateway.app.routeRecords;
    const urls = new Set(routes.map((route) => route.url));
    // The inventory covers every area, so a route added to any of them is checked here.
    for (const url of [
      '/mcp',
      '/healthz',
      '/authorize',
      '/oauth/token',
      '/oauth/register',
      '/consent',
      '/signin/oidc/callback',
      '/approvals/:id',
      '/admin/status',
      '/admin/sessions/:id/revoke',
      '/admin/receipts/:id/proof',
      '/admin/webhooks/:endpoint/replay',
      '/admin/drift/check',
      '/console/sessions/:id/revoke',
    ]) {
      expect(urls, url).toContain(url);
    }
    expect(routes.length).toBeGreaterThan(40);
    const without = routes.filter((route) => route.schemaParts.length === 0).map((route) => `${route.method} ${route.url}`);
    expect(without).toEqual([]);
  });

  it('a request an admin route schema refuses is 400 ADMIN_REQUEST_INVALID problem+json', async () => {
    const repeated = await fetch(`${gateway.url}/admin/receipts?limit=1&limit=2`, { headers: admin });
    expect(repeated.status).toBe(400);
    expect(repeated.headers.get('content-type')).toContain('application/problem+json');
    expect(await repeated.json()).toMatchObject({ status: 400, code: 'ADMIN_REQUEST_INVALID' });
    const replay = await fetch(`${gateway.url}/admin/webhooks/audit/replay`, {
      method: 'POST',
      headers: { ...admin, 'content-type': 'application/json' },
      body: '[1]',
    });
    expect(replay.status).toBe(400);
    expect(await replay.json()).toMatchObject({ code: 'ADMIN_REQUEST_INVALID' });
    // What the schema lets through is still checked by the route, with its own code.
    const filter = await fetch(`${gateway.url}/admin/receipts?outcome=maybe`, { headers: admin });
    expect([filter.status, ((await filter.json()) as { code: string }).code]).toEqual([400, 'RECEIPT_FILTER_INVALID']);
  });

  it('/mcp is not refused by Fastify for a body that is not JSON-RPC: the MCP layer answers it in JSON-RPC', async () => {
    const response = await fetch(gateway.mcpUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
        authorization: 'Bearer any',
      },
      body: '"not a JSON-RPC message"',
    });
    expect(response.headers.get('content-type')).not.toContain('problem+json');
    const body = (await response.json()) as { jsonrpc?: string; error?: { code: number } };
    expect(body.jsonrpc).toBe('2.0');
    expect(body.error?.code).toBeLessThan(0);
  });

  it('the health routes answer as before under their response schemas', async () => {
    expect(await (await fetch(`${gateway.url}/healthz?probe=1`)).json()).toEqual({ status: 'ok' });
    const ready = (await (await fetch(`${gateway.url}/readyz`)).json()) as Record<string, unknown>;
    expect(ready).toMatchObject({ status: 'ready', tools: expect.any(Number), generation: expect.any(Number) });
  });

  it('a path Fastify cannot route is problem+json REQUEST_PATH_INVALID that does not repeat the path', async () => {
    const routes = gateway.app.routeRecords.map((route) => route.url);
    const withParameter = routes.find((url) => url.includes('/:'));
    expect(withParameter).toBeDefined();
    const long = 'x'.repeat(300);
    const tooLong = await fetch(`${gateway.url}${withParameter!.replace(/:[^/]+/, long)}`, { headers: admin });
    expect(tooLong.status).toBe(414);
    expect(tooLong.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    const tooLongText = await tooLong.text();
    expect(JSON.parse(tooLongText)).toMatchObject({ status: 414, code: 'REQUEST_PATH_INVALID' });
    expect(tooLongText).not.toContain(long);

    const malformed = await fetch(`${gateway.url}/healthz%E0%A4%A`);
    expect(malformed.status).toBe(400);
    const malformedText = await malformed.text();
    expect(JSON.parse(malformedText)).toMatchObject({ status: 400, code: 'REQUEST_PATH_INVALID' });
    expect(malformedText).not.toContain('%E0%A4%A');
  });
});
