/**
 * What the tests of `gateway serve --workers N` (the built binary as a subprocess) and of several replicas share:
 * the signing key set an operator puts in a read-only vault, a person's session approved through the gateway's own
 * authorization server, requests spread over the workers, and the cluster's JSON log lines.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { decodeJwt } from 'jose';
import { Agent, fetch as undiciFetch } from 'undici';
import { gatewayBinary } from '../../../../test-support/cli.js';
import { approve, pkce, registerClient, tokenRequest } from '../oauth-support/authorization-server.js';
import { oauthSigningKeySet, receiptSigningKeyPem, startHarness, type Harness } from './harness.js';

/** Where the test clients say they are redirected to (never reached: the code is read from the Location). */
export const TEST_REDIRECT_URI = 'http://127.0.0.1:9/callback';

/**
 * What processes sharing one storage must hold alike, as an operator provides them to a read-only (env) vault: the
 * OAuth signing keys, the receipt signing key and the request-state key (`serve --workers` refuses to start without).
 */
export async function sharedKeysEnv(): Promise<Record<string, string>> {
  return {
    GATEWAY_SECRET_OAUTH_SIGNING_KEYS: await oauthSigningKeySet(),
    GATEWAY_SECRET_RECEIPTS_SIGNING_KEY: receiptSigningKeyPem(),
    GATEWAY_SECRET_REQUEST_STATE_KEY: randomBytes(32).toString('base64url'),
  };
}

/**
 * A harness gateway (./harness.ts) whose storage is the PostgreSQL database at `databaseUrl` (the connection string
 * in the env vault as `database-url`), with the keys processes sharing it hold alike; `storageExtra`: more
 * `storage:` lines (e.g. `  poolSize: 2`).
 */
export async function startPostgresHarness(databaseUrl: string, storageExtra: string[] = []): Promise<Harness> {
  return startHarness({
    configExtra: ['storage:', '  kind: postgres', '  url: database-url', ...storageExtra].join('\n'),
    env: { GATEWAY_SECRET_DATABASE_URL: databaseUrl, ...(await sharedKeysEnv()) },
  });
}

/** Runs `work` with every fetch() on a new connection (no keep-alive), so its requests reach every worker in turn. */
export async function onFreshConnections<T>(work: () => Promise<T>): Promise<T> {
  const fresh = new Agent({ pipelining: 0 });
  const originalFetch = globalThis.fetch;
  globalThis.fetch = ((input: string, init?: Record<string, unknown>) =>
    undiciFetch(input, { ...init, dispatcher: fresh })) as unknown as typeof fetch;
  try {
    return await work();
  } finally {
    globalThis.fetch = originalFetch;
    await fresh.close();
  }
}

export interface ApprovedSession {
  clientId: string;
  sessionId: string;
  accessToken: string;
  refreshToken: string;
}

/**
 * A native client registered at `issuer` (the gateway's canonical URL) and a session the harness's person approves
 * for get_order with the orders API key: the authorization code flow with PKCE, sign-in and consent without a browser.
 */
export async function approvedSession(issuer: string, clientName: string): Promise<ApprovedSession> {
  const mcpUrl = `${issuer}/mcp`;
  const registered = await registerClient(issuer, {
    client_name: clientName,
    redirect_uris: [TEST_REDIRECT_URI],
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
  });
  if (registered.status !== 201) throw new Error(`registration answered ${registered.status}: ${JSON.stringify(registered.body)}`);
  const clientId = registered.body.client_id as string;
  const { verifier, challenge } = pkce();
  const location = await approve(
    { issuer, mcpUrl },
    { clientId, redirectUri: TEST_REDIRECT_URI, challenge, method: 'S256' },
    { tools: ['get_order'], logins: ['orders/api_key'], lifetime: 3600 },
  );
  const tokens = await tokenRequest(issuer, {
    grant_type: 'authorization_code',
    code: location.searchParams.get('code')!,
    code_verifier: verifier,
    client_id: clientId,
    redirect_uri: TEST_REDIRECT_URI,
    resource: mcpUrl,
  });
  if (tokens.status !== 200) throw new Error(`the token endpoint answered ${tokens.status}: ${JSON.stringify(tokens.body)}`);
  const accessToken = tokens.body.access_token as string;
  return { clientId, sessionId: decodeJwt(accessToken).sid as string, accessToken, refreshToken: tokens.body.refresh_token as string };
}

/** `gateway serve --workers N` running as a subprocess, with what it printed and logged so far. */
export interface Cluster {
  child: ChildProcess;
  /** The JSON log lines of the primary and the workers (a line that is not JSON as `{ msg: line }`). */
  lines: Array<Record<string, unknown>>;
  stdout: string;
  stderr: string;
  exited: Promise<number | null>;
}

export function startCluster(options: { directory: string; env: Record<string, string>; workers: number }): Cluster {
  const child = spawn(process.execPath, [gatewayBinary, 'serve', '--workers', String(options.workers)], {
    cwd: options.directory,
    env: { ...process.env, ...options.env, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const cluster: Cluster = {
    child,
    lines: [],
    stdout: '',
    stderr: '',
    exited: new Promise((resolve) => child.once('close', (code) => resolve(code))),
  };
  let pending = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    cluster.stderr += chunk.toString('utf8');
    pending += chunk.toString('utf8');
    const parts = pending.split('\n');
    pending = parts.pop()!;
    for (const line of parts) {
      try {
        cluster.lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        cluster.lines.push({ msg: line });
      }
    }
  });
  child.stdout!.on('data', (chunk: Buffer) => (cluster.stdout += chunk.toString('utf8')));
  return cluster;
}

/** The pids of the workers that logged a line matching `filter` after line `from`. */
export function workerPids(cluster: Cluster, from: number, filter: (line: Record<string, unknown>) => boolean): Set<number> {
  return new Set(
    cluster.lines
      .slice(from)
      .filter((line) => typeof line.worker === 'number' && filter(line))
      .map((line) => line.pid as number),
  );
}

/** Polls `probe` every 50 ms until it returns a value (not undefined or false); throws after `timeoutMs`. */
export async function waitForValue<T>(what: string, probe: () => T | undefined | false, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
