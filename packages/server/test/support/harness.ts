/**
 * The test harness: the example orders API on a free loopback port, a temporary gateway.yaml, a signed
 * tools.lock made by the REAL CLI (import → review --all-supported → keys generate → publish), and the
 * gateway started with an allow-all authorizer. The allow-all authorizer exists only here: the product has
 * no unauthenticated mode, and `authorizerOverride` is not reachable from config or CLI flags.
 */
import { generateKeyPairSync } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { runGateway, repositoryRoot, temporaryDirectory } from '../../../../test-support/cli.js';
import { startGateway, type RunningGateway } from '../../src/gateway.js';
import { REDACTED_LOG_PATHS } from '../../src/logger.js';
import type { McpAuthorizer, McpCaller } from '../../src/calls/caller.js';
import type { PublicationRegistry } from '../../src/publications/registry.js';
import { freePort } from './net.js';
import { newDigestKey } from './receipt-journal.js';

export const ORDERS_API_KEY = 'canary-orders-key-7f3a9c';

export interface OrdersApi {
  url: string;
  requests: Array<{
    method: string;
    path: string;
    query: Record<string, string>;
    headers: Record<string, string | string[] | undefined>;
    body: unknown;
  }>;
  close(): Promise<void>;
}

export async function startExampleApi(apiKey = ORDERS_API_KEY): Promise<OrdersApi> {
  const module = (await import(join(repositoryRoot, 'examples', 'orders-api', 'server.mjs'))) as {
    startOrdersApi(options: { host?: string; port?: number; apiKey?: string }): Promise<OrdersApi>;
  };
  return module.startOrdersApi({ host: '127.0.0.1', port: 0, apiKey });
}

/**
 * Every tool in the current snapshot, approved with its current fingerprint, and every configured login:
 * what a person (`subject`) approving everything would get. Recomputed after each reload.
 */
export function allowAll(logins: ReadonlySet<string>, subject = 'harness'): (context: { registry: PublicationRegistry }) => McpAuthorizer {
  return ({ registry }) => {
    let generation = -1;
    let caller: McpCaller | undefined;
    return {
      async authenticate() {
        const snapshot = registry.snapshot();
        if (!caller || generation !== snapshot.generation) {
          const tools = new Map<string, string>();
          for (const name of snapshot.names) tools.set(name, snapshot.tools.get(name)!.entry.fingerprint);
          caller = { sessionId: 'session-1', subject, clientId: 'harness', tools, logins, expiresAt: Date.now() + 3_600_000 };
          generation = snapshot.generation;
        }
        return { ok: true, caller };
      },
      sessionState: () => 'open',
    };
  };
}

/**
 * A receipt checkpoint signing key (Ed25519, PKCS#8 PEM) for `GATEWAY_SECRET_RECEIPTS_SIGNING_KEY`: the env
 * vault cannot store the one a gateway makes, and `receipts verify` trusts only the vault's key (and
 * `receipts.trustedKeys`), so gateways that restart over one database need the same key.
 */
export function receiptSigningKeyPem(): string {
  return generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
}

/** An OAuth signing key set as the vault holds it (`oauth-signing-keys`): shared, so every process's tokens verify on all. */
export async function oauthSigningKeySet(): Promise<string> {
  const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const jwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint({ kty: jwk.kty!, crv: jwk.crv!, x: jwk.x! });
  return JSON.stringify({ keys: [{ kid, createdAt: new Date().toISOString(), privateJwk: { ...jwk, kid, alg: 'EdDSA' } }] });
}

/** The admin API token of harness gateways (env vault), for tests that run `gateway status` against them. */
export const HARNESS_ADMIN_TOKEN = 'harness-admin-token';

export interface Workspace {
  directory: string;
  configPath: string;
  lockPath: string;
  documentPath: string;
  privateKeyPath: string;
  port: number;
  api: OrdersApi;
  env: Record<string, string>;
  /** Runs the CLI in the workspace; throws with its output when it fails. */
  cli(args: string[]): Promise<string>;
  /** Rewrites the document, then import → review --all-supported → publish (a new signed lock). */
  republish(edit: (document: string) => string): Promise<void>;
  cleanup(): Promise<void>;
}

export interface WorkspaceOptions {
  /** Extra YAML lines appended under `gateway` (indented by 2 spaces). */
  gatewayExtra?: string;
  /** Extra YAML lines appended under `sources.orders` (indented by 4 spaces). */
  sourceExtra?: string;
  /** Extra top-level YAML. */
  configExtra?: string;
  /** Changes the example OpenAPI document before the first import (e.g. to add hostile operations). */
  editDocument?: (document: string) => string;
  /** Turn the drift watcher on with this interval (off by default in the harness). */
  driftIntervalSeconds?: number;
  /** More variables of the gateway's environment (secrets of the env vault: `GATEWAY_SECRET_…`). */
  env?: Record<string, string>;
}

export async function prepareWorkspace(options: WorkspaceOptions = {}): Promise<Workspace> {
  const temporary = await temporaryDirectory('gateway-harness-');
  const directory = temporary.path;
  const api = await startExampleApi();
  const port = await freePort();
  const env = {
    GATEWAY_SECRET_ORDERS_API_KEY: ORDERS_API_KEY,
    GATEWAY_SECRET_ADMIN_TOKEN: HARNESS_ADMIN_TOKEN,
    // The env vault cannot create the receipt digest key: one the gateway keeps across restarts, as an operator
    // provides it, so that the receipt journal (authenticated with a key derived from it) is on.
    GATEWAY_SECRET_RECEIPTS_DIGEST_KEY: newDigestKey(),
    ...options.env,
  };
  const example = await readFile(join(repositoryRoot, 'examples', 'orders-api', 'openapi.yaml'), 'utf8');
  const documentPath = join(directory, 'openapi.yaml');
  const document = example.replace('http://127.0.0.1:4010', api.url);
  await writeFile(documentPath, options.editDocument ? options.editDocument(document) : document);
  const configPath = join(directory, 'gateway.yaml');
  await writeFile(
    configPath,
    [
      'gateway:',
      `  url: http://127.0.0.1:${port}`,
      `  listen: 127.0.0.1:${port}`,
      ...(options.gatewayExtra ? [options.gatewayExtra.replace(/^/gm, '  ')] : []),
      'sources:',
      '  orders:',
      '    kind: openapi',
      '    document: openapi.yaml',
      '    credentials:',
      '      api_key: { type: apiKey, secret: orders-api-key }',
      ...(options.sourceExtra ? [options.sourceExtra.replace(/^/gm, '    ')] : []),
      'trust:',
      '  keys: [keys/publisher.pub.jwk]',
      'network:',
      '  allowPrivateNetworks: [127.0.0.1/32]',
      'vault:',
      '  provider: env',
      'drift:',
      ...(options.driftIntervalSeconds === undefined
        ? ['  enabled: false']
        : ['  enabled: true', `  intervalSeconds: ${options.driftIntervalSeconds}`]),
      options.configExtra ?? '',
      '',
    ].join('\n'),
  );

  const cli = async (args: string[]): Promise<string> => {
    const result = await runGateway(args, { cwd: directory, env });
    if (result.exitCode !== 0) {
      throw new Error(`gateway ${args.join(' ')} exited ${result.exitCode}:\n${String(result.stdout)}\n${String(result.stderr)}`);
    }
    return String(result.stdout);
  };
  const privateKeyPath = join(directory, 'keys', 'publisher.private.jwk');
  const publish = async () => {
    await cli(['import', 'orders']);
    await cli(['review', 'orders', '--all-supported', '--no-interactive']);
    await cli(['publish', 'orders', '--key', privateKeyPath, '--publisher', 'harness@example.com']);
  };
  await cli(['keys', 'generate', '--out', 'keys']);
  await publish();

  return {
    directory,
    configPath,
    lockPath: join(directory, 'tools.lock'),
    documentPath,
    privateKeyPath,
    port,
    api,
    env,
    cli,
    async republish(edit) {
      const text = await readFile(documentPath, 'utf8');
      await writeFile(documentPath, edit(text));
      await publish();
    },
    async cleanup() {
      await api.close();
      await temporary.cleanup();
    },
  };
}

export interface Harness extends Workspace {
  gateway: RunningGateway;
  mcpUrl: string;
  /** JSON log lines the gateway wrote. */
  logs: string[];
  stop(): Promise<void>;
}

/** A workspace plus a running gateway on its free port, with the allow-all authorizer. */
export async function startHarness(options: WorkspaceOptions & { lockDebounceMs?: number } = {}): Promise<Harness> {
  const workspace = await prepareWorkspace(options);
  const logs: string[] = [];
  const logger = pino(
    { level: 'debug', redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' } },
    { write: (line: string) => void logs.push(line) },
  );
  const gateway = await startGateway({
    configPath: workspace.configPath,
    lockPath: workspace.lockPath,
    env: workspace.env,
    logger,
    lockDebounceMs: options.lockDebounceMs ?? 50,
    shutdownGraceMs: 2_000,
    authorizerOverride: allowAll(new Set(['orders/api_key'])),
  });
  return {
    ...workspace,
    gateway,
    mcpUrl: gateway.mcpUrl,
    logs,
    async stop() {
      await gateway.close();
      await workspace.cleanup();
    },
  };
}
