/**
 * A real authorization area on a loopback port for OAuth tests: a temporary gateway.yaml, the file vault,
 * a SQLite database, `createAuthorization` registered on Fastify, plus a `/mcp` stand-in that answers
 * what the authorizer decided (the real /mcp plugin is exercised by the e2e tests).
 */
import { createHash, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:https';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { createGatewayLogger } from '../../src/logger.js';
import { loadConfig } from '@gateway/core';
import { temporaryDirectory } from '../../../../test-support/cli.js';
import {
  authorizationMigrations,
  createAuthorization,
  openSqliteAuthorizationStores,
  type AuthorizationComponents,
  type AuthorizationContext,
  type ConsentTool,
} from '../../src/authorization/index.js';
import type { LoginSummary as ConsentLogin } from '../../src/credentials/index.js';
import type { LoginSummary } from '../../src/credentials/index.js';
import { PeopleDirectory } from '@gateway/runtime';
import type { SessionStore } from '../../src/authorization/stores/session-store.js';
import { sqliteSessionStore } from '../../src/authorization/stores/sqlite/index.js';
import { openDatabase, type SqliteDatabase } from '../../src/store/sqlite/database.js';
import { createVault } from '@gateway/runtime';
import type { Vault } from '@gateway/runtime';
import { freePort } from '../support/net.js';

export const PERSON = { name: 'alice', password: 'correct horse battery staple', email: 'alice@example.com' };

export const TOOLS: ConsentTool[] = [
  {
    name: 'search_orders',
    title: 'Search orders',
    description: 'Lists orders, newest first.',
    source: 'orders',
    readOnly: true,
    destructive: false,
    fingerprint: 'sha256:aaa',
    target: { kind: 'http', method: 'GET', path: '/orders' },
    logins: ['orders/api_key'],
  },
  {
    name: 'get_order',
    title: 'Get an order',
    description: 'Reads one order.',
    source: 'orders',
    readOnly: true,
    destructive: false,
    fingerprint: 'sha256:bbb',
    target: { kind: 'http', method: 'GET', path: '/orders/{orderId}' },
    logins: ['orders/api_key'],
  },
  {
    name: 'create_order',
    title: 'Create an order',
    description: 'Places an order.',
    source: 'orders',
    readOnly: false,
    destructive: false,
    fingerprint: 'sha256:ccc',
    target: { kind: 'http', method: 'POST', path: '/orders' },
    logins: ['orders/api_key'],
  },
  {
    name: 'delete_order',
    title: 'Delete an order',
    description: 'Deletes an order for good.',
    source: 'orders',
    readOnly: false,
    destructive: true,
    fingerprint: 'sha256:ddd',
    target: { kind: 'http', method: 'DELETE', path: '/orders/{orderId}' },
    logins: ['orders/api_key'],
  },
];
export const LOGINS: LoginSummary[] = [{ id: 'orders/api_key', source: 'orders', scheme: 'api_key', type: 'apiKey' }];

export interface TestAuthorizationServer {
  issuer: string;
  mcpUrl: string;
  directory: string;
  configPath: string;
  database: SqliteDatabase;
  vault: Vault;
  store: SessionStore;
  app: FastifyInstance;
  authorization: AuthorizationComponents;
  close(): Promise<void>;
}

export async function startAuthorizationServer(
  options: {
    authYaml?: string;
    extraYaml?: string;
    caCertificates?: string[] /** The tools and logins on offer (default TOOLS and LOGINS). */;
    tools?: ConsentTool[];
    logins?: ConsentLogin[];
    /** What changed since an approved fingerprint (default: nothing known, as after a restart). */
    changesSince?: AuthorizationContext['changesSince'] /** Collects the JSON lines of the gateway's own logger (info level). */;
    logLines?: string[];
    /** How long a statement waits for another connection's write lock (default: the gateway's BUSY_TIMEOUT_MS). */
    busyTimeoutMs?: number;
  } = {},
): Promise<TestAuthorizationServer> {
  const temporary = await temporaryDirectory('gateway-oauth-');
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const configPath = join(temporary.path, 'gateway.yaml');
  await writeFile(
    configPath,
    [
      'gateway:',
      `  url: ${issuer}`,
      'sources: {}',
      'network:',
      '  allowPrivateNetworks: [127.0.0.1/32]',
      options.authYaml ? `auth:\n${options.authYaml.replace(/^/gm, '  ')}` : '',
      options.extraYaml ?? '',
      '',
    ].join('\n'),
  );
  const loaded = await loadConfig(configPath);
  const vault = await createVault(loaded, { env: {} });
  const database = openDatabase(
    join(temporary.path, '.gateway', 'gateway.db'),
    authorizationMigrations,
    options.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: options.busyTimeoutMs },
  );
  const logLines = options.logLines;
  const app = logLines
    ? (Fastify({
        loggerInstance: createGatewayLogger({
          level: 'info',
          destination: { write: (line: string) => void logLines.push(line) },
        }) as unknown as FastifyBaseLogger,
      }) as unknown as FastifyInstance)
    : Fastify({ logger: false });
  const authorization = await createAuthorization({
    loaded,
    stores: openSqliteAuthorizationStores(database),
    vault,
    logger: app.log,
    mcpUrl: `${issuer}/mcp`,
    listTools: () => options.tools ?? TOOLS,
    listLogins: () => options.logins ?? LOGINS,
    changesSince: options.changesSince ?? (() => undefined),
    ...(options.caCertificates ? { clientMetadataCaCertificates: options.caCertificates } : {}),
  });
  await app.register(authorization.plugin);
  app.all('/mcp', async (request, reply) => {
    const result = await authorization.authorizer.authenticate(request);
    if (!result.ok) return reply.status(result.status).headers(result.headers).send(result.body);
    return {
      sessionId: result.caller.sessionId,
      subject: result.caller.subject,
      clientId: result.caller.clientId,
      tools: Object.fromEntries(result.caller.tools),
      logins: [...result.caller.logins],
    };
  });
  await app.listen({ host: '127.0.0.1', port });
  await new PeopleDirectory(join(temporary.path, '.gateway', 'people.json')).add(PERSON.name, PERSON.password, { email: PERSON.email });
  return {
    issuer,
    mcpUrl: `${issuer}/mcp`,
    directory: temporary.path,
    configPath,
    database,
    vault,
    store: sqliteSessionStore(database),
    app,
    authorization,
    async close() {
      await app.close();
      await authorization.close();
      database.close();
      await temporary.cleanup();
    },
  };
}

/** PKCE pair (RFC 7636 S256). */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** A minimal browser: cookie jar, manual redirects, form posts. */
export class Browser {
  private readonly cookies = new Map<string, string>();

  async request(url: string, init: { method?: string; form?: Record<string, string | string[]> } = {}): Promise<Response> {
    const headers: Record<string, string> = {};
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    let body: string | undefined;
    if (init.form) {
      const form = new URLSearchParams();
      for (const [name, value] of Object.entries(init.form))
        for (const item of Array.isArray(value) ? value : [value]) form.append(name, item);
      body = form.toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    const response = await fetch(url, { method: init.method ?? (body ? 'POST' : 'GET'), headers, body, redirect: 'manual' });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const [name, ...rest] = pair!.split('=');
      const value = rest.join('=');
      if (/max-age=0/i.test(cookie)) this.cookies.delete(name!);
      else this.cookies.set(name!, value);
    }
    return response;
  }

  /** Follows redirects within `origin`; returns the first response that is not a same-origin redirect. */
  async follow(
    url: string,
    origin: string,
    init: { form?: Record<string, string | string[]> } = {},
  ): Promise<{ response: Response; url: string }> {
    let current = url;
    let response = await this.request(current, init);
    for (let hop = 0; hop < 10 && response.status >= 300 && response.status < 400; hop += 1) {
      const next = new URL(response.headers.get('location')!, current).href;
      if (!next.startsWith(origin)) return { response, url: current };
      current = next;
      response = await this.request(current);
    }
    return { response, url: current };
  }
}

export function hiddenField(html: string, name: string): string {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (!match) throw new Error(`no hidden field ${name} in page:\n${html.slice(0, 500)}`);
  return match[1]!.replace(/&#(\d+);/g, (_all, code: string) => String.fromCharCode(Number(code)));
}

export interface AuthorizeInput {
  clientId: string;
  redirectUri: string;
  challenge?: string;
  method?: string;
  resource?: string | null;
  state?: string;
}

export function authorizeUrl(server: { issuer: string; mcpUrl: string }, input: AuthorizeInput): string {
  const url = new URL(`${server.issuer}/authorize`);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', input.clientId);
  url.searchParams.set('redirect_uri', input.redirectUri);
  if (input.challenge !== undefined) url.searchParams.set('code_challenge', input.challenge);
  if (input.method !== undefined) url.searchParams.set('code_challenge_method', input.method);
  if (input.resource !== null) url.searchParams.set('resource', input.resource ?? server.mcpUrl);
  url.searchParams.set('state', input.state ?? 'state-123');
  return url.href;
}

/**
 * Drives sign-in and consent over plain HTTP; returns the final redirect to the client (its Location).
 */
export async function approve(
  server: { issuer: string; mcpUrl: string },
  input: AuthorizeInput,
  choice: {
    tools: string[];
    logins?: string[];
    lifetime?: number;
    decision?: 'allow' | 'deny';
    browser?: Browser;
    password?: string;
    /** Reads the consent page before it is answered. */
    inspect?: (consentHtml: string) => void;
  },
): Promise<URL> {
  const browser = choice.browser ?? new Browser();
  let { response, url } = await browser.follow(authorizeUrl(server, input), server.issuer);
  if (url.includes('/signin')) {
    const html = await response.text();
    ({ response, url } = await browser.follow(`${server.issuer}/signin`, server.issuer, {
      form: {
        csrf_token: hiddenField(html, 'csrf_token'),
        request: hiddenField(html, 'request'),
        name: PERSON.name,
        password: choice.password ?? PERSON.password,
      },
    }));
  }
  if (response.status >= 300 && response.status < 400) return new URL(response.headers.get('location')!);
  if (!url.includes('/consent'))
    throw new Error(`expected the consent page, got ${url} (${response.status}): ${(await response.text()).slice(0, 300)}`);
  const html = await response.text();
  choice.inspect?.(html);
  const lifetime = choice.lifetime ?? Number(/name="lifetime" value="(\d+)"/.exec(html)![1]);
  const decided = await browser.request(`${server.issuer}/consent`, {
    form: {
      csrf_token: hiddenField(html, 'csrf_token'),
      request: hiddenField(html, 'request'),
      tool: choice.tools,
      login: choice.logins ?? [],
      lifetime: String(lifetime),
      decision: choice.decision ?? 'allow',
    },
  });
  if (decided.status !== 303) throw new Error(`consent answered ${decided.status}: ${(await decided.text()).slice(0, 400)}`);
  return new URL(decided.headers.get('location')!);
}

export async function registerClient(
  issuer: string,
  metadata: Record<string, unknown>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${issuer}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(metadata),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

export async function tokenRequest(
  issuer: string,
  form: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const response = await fetch(`${issuer}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown>, headers: response.headers };
}

/** A test CA and a server certificate for 127.0.0.1, made with the openssl CLI. */
export async function makeTestCertificates(directory: string): Promise<{ ca: string; key: string; cert: string }> {
  const dir = join(directory, 'tls');
  await mkdir(dir, { recursive: true });
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  run([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=Gateway Test CA',
  ]);
  run([
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'server.key',
    '-out',
    'server.csr',
    '-subj',
    '/CN=127.0.0.1',
  ]);
  await writeFile(join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n');
  run([
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.pem',
    '-days',
    '2',
    '-extfile',
    'ext.cnf',
  ]);
  const { readFile } = await import('node:fs/promises');
  return {
    ca: await readFile(join(dir, 'ca.pem'), 'utf8'),
    key: await readFile(join(dir, 'server.key'), 'utf8'),
    cert: await readFile(join(dir, 'server.pem'), 'utf8'),
  };
}

/** An HTTPS server for client metadata documents; `documents` maps a path to [body, headers]. */
export async function startMetadataHost(tls: { key: string; cert: string }): Promise<{
  origin: string;
  documents: Map<string, { body: string; headers?: Record<string, string> }>;
  hits: Map<string, number>;
  server: Server;
  close(): Promise<void>;
}> {
  const documents = new Map<string, { body: string; headers?: Record<string, string> }>();
  const hits = new Map<string, number>();
  const server = createServer({ key: tls.key, cert: tls.cert }, (request, response) => {
    const path = request.url ?? '/';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const document = documents.get(path);
    if (!document) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json', ...document.headers }).end(document.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return {
    origin: `https://127.0.0.1:${address.port}`,
    documents,
    hits,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
