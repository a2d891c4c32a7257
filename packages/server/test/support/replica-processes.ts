/**
 * Replicas as an operator runs them: N `gateway serve` processes (the built CLI, as subprocesses) on one PostgreSQL
 * database, each on its own loopback port and with a data directory of its own (another host), all under one
 * canonical URL (a load balancer's: the first replica's address). The signing keys (OAuth tokens, receipt
 * checkpoints) are in the vault, shared, as docs/deployment.md requires; the upstream is the harness's orders API.
 * A person signs in once through the first replica and approves a session: the access token is valid on every
 * replica, since the session is in the database. A replica can be SIGKILLed and started again on its port.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PeopleDirectory } from '@gateway/runtime';
import { SEMI_SPACE_FLAG } from '@gateway/runtime/node-flags';
import { gatewayBinary } from '../../../../test-support/cli.js';
import { stopWhenGone } from '../../../../test-support/postgres.js';
import { approve, PERSON, pkce, registerClient, tokenRequest } from '../oauth-support/authorization-server.js';
import { sharedKeysEnv } from './cluster.js';
import { prepareWorkspace, type Workspace } from './harness.js';
import { freePort } from './net.js';

/** How long a (re)started replica may take to answer `/readyz` (a shared 2-core machine under load). */
const READY_TIMEOUT_MS = 60_000;
/** How long SIGTERM may take before the replica is killed. */
const STOP_TIMEOUT_MS = 10_000;
const REDIRECT = 'http://127.0.0.1:9/callback';

export interface Replica {
  index: number;
  port: number;
  /** This replica's own `/mcp` address (its Host header names the loopback port it listens on). */
  mcpUrl: string;
  configPath: string;
  /** Its stdout and stderr, appended across restarts. */
  logPath: string;
  /** The running process, or undefined while it is down. */
  child: ChildProcess | undefined;
  /** How many times it was started. */
  starts: number;
}

/** A replica that exited without being told to (a crash: what a chaos test must not see). */
export interface UnexpectedExit {
  index: number;
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ReplicaSet {
  workspace: Workspace;
  /** The environment every replica and CLI run gets (the env vault's secrets). */
  env: Record<string, string>;
  replicas: Replica[];
  /** Replicas that exited on their own, since the start. */
  unexpectedExits: UnexpectedExit[];
  /** An access token of an approved session (the tools given to `startReplicaSet`), valid on every replica. */
  token: string;
  /** SIGKILL: no shutdown, no checkpoint, no lease released, connections cut mid-request. */
  kill(index: number): Promise<void>;
  /** Starts a replica that is down on its port; resolves once it answers `/readyz`. */
  start(index: number): Promise<void>;
  /** The last lines of a replica's log (for a failure message). */
  logTail(index: number, lines?: number): Promise<string>;
  /** Stops every running replica (SIGTERM, then SIGKILL) and removes the workspace. */
  close(): Promise<void>;
}

export interface ReplicaSetOptions {
  count: number;
  databaseUrl: string;
  /** Top-level YAML added to the shared gateway.yaml (webhooks, receipts). */
  configExtra?: string;
  /** Extra vault secrets (`GATEWAY_SECRET_…`). */
  secrets?: Record<string, string>;
  /** The tools the session approves (with the orders API key login). */
  tools: string[];
}

async function waitUntilReady(replica: Replica, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`replica ${replica.index} exited (${child.exitCode ?? child.signalCode}) while starting; see ${replica.logPath}`);
    }
    try {
      const response = await fetch(`http://127.0.0.1:${replica.port}/readyz`, { signal: AbortSignal.timeout(2_000) });
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`replica ${replica.index} not ready after ${READY_TIMEOUT_MS} ms; see ${replica.logPath}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** The replica's config: the shared one with a data directory of its own (what stays with its host). */
async function writeReplicaConfig(workspace: Workspace, index: number): Promise<string> {
  const configPath = join(workspace.directory, `gateway-replica-${index}.yaml`);
  const config = await readFile(workspace.configPath, 'utf8');
  await writeFile(configPath, config.replace('gateway:\n', `gateway:\n  dataDirectory: .gateway-replica-${index}\n`));
  return configPath;
}

async function approvedSessionToken(workspace: Workspace, tools: string[]): Promise<string> {
  const server = { issuer: `http://127.0.0.1:${workspace.port}`, mcpUrl: `http://127.0.0.1:${workspace.port}/mcp` };
  const registered = await registerClient(server.issuer, {
    client_name: 'replicas test',
    redirect_uris: [REDIRECT],
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
  });
  const clientId = registered.body.client_id as string;
  const { verifier, challenge } = pkce();
  const location = await approve(
    server,
    { clientId, redirectUri: REDIRECT, challenge, method: 'S256' },
    { tools, logins: ['orders/api_key'], lifetime: 3600 },
  );
  const tokens = await tokenRequest(server.issuer, {
    grant_type: 'authorization_code',
    code: location.searchParams.get('code')!,
    code_verifier: verifier,
    client_id: clientId,
    redirect_uri: REDIRECT,
    resource: server.mcpUrl,
  });
  if (tokens.status !== 200) throw new Error(`token endpoint answered ${tokens.status}: ${JSON.stringify(tokens.body)}`);
  return tokens.body.access_token as string;
}

export async function startReplicaSet(options: ReplicaSetOptions): Promise<ReplicaSet> {
  const workspace = await prepareWorkspace({
    configExtra: [
      'storage:\n  kind: postgres\n  url: database-url',
      // One people file for every replica (a person signs in on whichever the balancer picks).
      'auth:\n  local:\n    file: people.json\n  sessions:\n    lifetimeChoicesSeconds: [3600]',
      options.configExtra ?? '',
    ].join('\n'),
  });
  const env: Record<string, string> = {
    ...workspace.env,
    ...options.secrets,
    GATEWAY_SECRET_DATABASE_URL: options.databaseUrl,
    // What replicas must hold alike: the OAuth signing keys, the receipt signing key (one log, one origin) and the
    // request-state key.
    ...(await sharedKeysEnv()),
  };
  workspace.env = env;
  await new PeopleDirectory(join(workspace.directory, 'people.json')).add(PERSON.name, PERSON.password);

  const replicas: Replica[] = [];
  for (let index = 0; index < options.count; index += 1) {
    // The first replica listens where gateway.url points (the issuer the person signs in at); the others elsewhere.
    const port = index === 0 ? workspace.port : await freePort();
    replicas.push({
      index,
      port,
      mcpUrl: `http://127.0.0.1:${port}/mcp`,
      configPath: await writeReplicaConfig(workspace, index),
      logPath: join(workspace.directory, `replica-${index}.log`),
      child: undefined,
      starts: 0,
    });
  }

  const unexpectedExits: UnexpectedExit[] = [];
  /** The processes this set is stopping or killing (their exit is expected). */
  const stopping = new WeakSet<ChildProcess>();
  const watchdogs = new Map<ChildProcess, { kill(): void }>();

  const start = async (index: number) => {
    const replica = replicas[index]!;
    if (replica.child) throw new Error(`replica ${index} is running`);
    const log = openSync(replica.logPath, 'a');
    const child = spawn(
      process.execPath,
      [SEMI_SPACE_FLAG, gatewayBinary, '--config', replica.configPath, 'serve', '--listen', `127.0.0.1:${replica.port}`],
      { cwd: workspace.directory, env: { ...process.env, ...env, NO_COLOR: '1' }, stdio: ['ignore', log, log] },
    );
    closeSync(log);
    replica.child = child;
    replica.starts += 1;
    // Should the test process die without stopping it, the replica goes too (and its data directory).
    watchdogs.set(
      child,
      stopWhenGone(process.pid, ['kill', ['-9', String(child.pid)]], join(workspace.directory, `.gateway-replica-${index}`)),
    );
    child.once('exit', (code, signal) => {
      watchdogs.get(child)?.kill();
      watchdogs.delete(child);
      if (replica.child === child) replica.child = undefined;
      if (!stopping.has(child)) unexpectedExits.push({ index, code, signal });
    });
    await waitUntilReady(replica, child);
  };

  const kill = async (index: number) => {
    const child = replicas[index]!.child;
    if (!child) return;
    stopping.add(child);
    child.kill('SIGKILL');
    await exited(child);
  };

  const stop = async (replica: Replica) => {
    const child = replica.child;
    if (!child) return;
    stopping.add(child);
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited(child);
    clearTimeout(timer);
  };

  try {
    // Together, as a deployment rolls them out: migrations run once, under their advisory lock.
    await Promise.all(replicas.map((replica) => start(replica.index)));
    const token = await approvedSessionToken(workspace, options.tools);
    return {
      workspace,
      env,
      replicas,
      unexpectedExits,
      token,
      kill,
      start,
      async logTail(index, lines = 40) {
        const text = await readFile(replicas[index]!.logPath, 'utf8').catch(() => '');
        return text.split('\n').slice(-lines).join('\n');
      },
      async close() {
        await Promise.all(replicas.map(stop));
        await workspace.cleanup();
      },
    };
  } catch (error) {
    await Promise.all(replicas.map(stop));
    await workspace.cleanup();
    throw error;
  }
}
