/**
 * `gateway serve --workers 2` as a subprocess: two worker processes behind one port, one database. A person
 * signs in and approves a session with every step on a new connection (so on both workers); the session
 * works through both workers; revoking it (the CLI, on the shared database) is refused
 * by every worker at once; a killed worker is restarted; SIGTERM stops them all.
 */
import { Agent, request } from 'undici';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runGateway } from '../../../test-support/cli.js';
import { PeopleDirectory } from '@gateway/runtime';
import {
  approvedSession,
  onFreshConnections,
  sharedKeysEnv,
  startCluster,
  TEST_REDIRECT_URI,
  waitForValue,
  workerPids,
  type Cluster,
} from './support/cluster.js';
import { mcpRequest } from './support/fixtures.js';
import { HARNESS_ADMIN_TOKEN, prepareWorkspace, type Workspace } from './support/harness.js';
import { journalKeyOf, journalText, receiptDraft } from './support/receipt-journal.js';
import { SEMI_SPACE_FLAG } from '@gateway/runtime/node-flags';
import { authorizeUrl, Browser, hiddenField, PERSON, pkce, registerClient } from './oauth-support/authorization-server.js';

let workspace: Workspace;
let env: Record<string, string>;
let token: string;
let sessionId: string;

function startWorkers(extraEnv: Record<string, string> = {}): Cluster {
  return startCluster({ directory: workspace.directory, env: { ...env, ...extraEnv }, workers: 2 });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** One tools/call on a new connection (the cluster spreads connections over the workers). */
async function callOnNewConnection(): Promise<{ status: number; text: string }> {
  const agent = new Agent({ connections: 1 });
  try {
    const response = await request(`${workspace.env.MCP_URL}`, {
      method: 'POST',
      dispatcher: agent,
      ...mcpRequest('2026-07-28', 'tools/call', { name: 'get_order', arguments: { orderId: 'ord_1001' } }, token),
    });
    return { status: response.statusCode, text: await response.body.text() };
  } finally {
    await agent.close();
  }
}

beforeAll(async () => {
  workspace = await prepareWorkspace({ configExtra: ['auth:', '  sessions:', '    lifetimeChoicesSeconds: [3600]'].join('\n') });
  env = {
    ...workspace.env,
    // The keys every worker must hold alike: OAuth's, the receipt signing key (each signs checkpoints the others
    // must trust) and the request-state key.
    ...(await sharedKeysEnv()),
  };
  await new PeopleDirectory(join(workspace.directory, '.gateway', 'people.json')).add(PERSON.name, PERSON.password);
  workspace.env.MCP_URL = `http://127.0.0.1:${workspace.port}/mcp`;
}, 90_000);

async function registerNativeClient(name: string): Promise<string> {
  const registered = await registerClient(`http://127.0.0.1:${workspace.port}`, {
    client_name: name,
    redirect_uris: [TEST_REDIRECT_URI],
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
  });
  return registered.body.client_id as string;
}

/**
 * A person approves a session through the cluster with every request on a new connection (no keep-alive),
 * so the steps of one sign-in land on different workers: the page state they share is in the database.
 */
async function approveThroughCluster(): Promise<void> {
  const approved = await onFreshConnections(() => approvedSession(`http://127.0.0.1:${workspace.port}`, 'workers test'));
  token = approved.accessToken;
  sessionId = approved.sessionId;
}

afterAll(async () => {
  await workspace?.cleanup();
});

describe('gateway serve --workers', () => {
  it('refuses a worker count that is not a whole number from 1 to 64 (WORKERS_INVALID, usage exit 2)', async () => {
    for (const count of ['0', '65', '1.5', 'two']) {
      const run = await runGateway(['serve', '--workers', count], { cwd: workspace.directory, env });
      expect(run.exitCode).toBe(2);
      expect(run.stderr).toContain('error WORKERS_INVALID');
    }
  }, 30_000);

  it('refuses to start workers when the vault cannot share the signing keys (WORKERS_SIGNING_KEYS_NOT_SHARED)', async () => {
    const cluster = startWorkers({ GATEWAY_SECRET_OAUTH_SIGNING_KEYS: '' });
    const code = await cluster.exited;
    expect(code, cluster.stderr + cluster.stdout).not.toBe(0);
    expect(cluster.stderr).toContain('WORKERS_SIGNING_KEYS_NOT_SHARED');
  }, 30_000);

  it('refuses to start workers when the vault cannot share the receipt signing key (RECEIPTS_SIGNING_KEY_NOT_SHARED)', async () => {
    const cluster = startWorkers({ GATEWAY_SECRET_RECEIPTS_SIGNING_KEY: '' });
    const code = await cluster.exited;
    expect(code, cluster.stderr + cluster.stdout).not.toBe(0);
    expect(cluster.stderr).toContain('RECEIPTS_SIGNING_KEY_NOT_SHARED');
  }, 30_000);

  it('refuses to start workers when the vault cannot share the request-state key (REQUEST_STATE_KEY_NOT_SHARED): ' +
    "a retry's state issued by one worker must open on the others", async () => {
    const cluster = startWorkers({ GATEWAY_SECRET_REQUEST_STATE_KEY: '' });
    const code = await cluster.exited;
    expect(code, cluster.stderr + cluster.stdout).not.toBe(0);
    expect(cluster.stderr).toContain('REQUEST_STATE_KEY_NOT_SHARED');
  }, 30_000);

  it('counts failed sign-ins across workers: the limit is the same as with one process, not one per worker', async () => {
    const cluster = startWorkers();
    try {
      // A start on a loaded machine takes a while; a cluster that exits instead says why.
      await waitForValue(
        'the cluster to serve',
        () => cluster.stdout.includes('with 2 workers') || cluster.child.exitCode !== null,
        60_000,
      );
      expect(cluster.stdout, cluster.stderr).toContain('with 2 workers');
      await waitForValue('both workers to listen', () => cluster.lines.filter((line) => line.msg === 'worker listening').length === 2);
      const statuses = await onFreshConnections(async () => {
        const issuer = `http://127.0.0.1:${workspace.port}`;
        const clientId = await registerNativeClient('throttle test');
        const browser = new Browser();
        const signIn = await browser.follow(
          authorizeUrl(
            { issuer, mcpUrl: workspace.env.MCP_URL! },
            { clientId, redirectUri: TEST_REDIRECT_URI, challenge: pkce().challenge, method: 'S256' },
          ),
          issuer,
        );
        let html = await signIn.response.text();
        const before = cluster.lines.length;
        const seen: number[] = [];
        // The default limit is 5 failures per account; each guess on a new connection, so both workers take part.
        for (let attempt = 0; attempt < 8; attempt += 1) {
          const response = await browser.request(`${issuer}/signin`, {
            form: {
              csrf_token: hiddenField(html, 'csrf_token'),
              request: hiddenField(html, 'request'),
              name: 'mallory-target',
              password: `guess-${attempt}`,
            },
          });
          seen.push(response.status);
          html = await response.text();
        }
        const answeredBy = await waitForValue('both workers to answer guesses', () => {
          const pids = workerPids(cluster, before, (line) => line.msg === 'request completed');
          return pids.size === 2 ? pids : undefined;
        });
        expect(answeredBy.size).toBe(2);
        return seen;
      });
      expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
      cluster.child.kill('SIGTERM');
      expect(await cluster.exited).toBe(0);
    } finally {
      if (cluster.child.exitCode === null) cluster.child.kill('SIGKILL');
    }
  }, 120_000);

  it('approves a session across workers, serves it through every worker, refuses it in every worker once revoked, ' +
    'restarts a killed worker and stops all on SIGTERM', async () => {
    // A third worker served last time and stopped with a receipt still in its journal: worker 1, starting
    // alone, moves it into the database (no worker 3 runs now to do it).
    const dataDirectory = join(workspace.directory, '.gateway');
    await writeFile(
      join(dataDirectory, 'receipts-journal-worker-3.jsonl'),
      journalText(journalKeyOf(env.GATEWAY_SECRET_RECEIPTS_DIGEST_KEY!), 'worker-3', [receiptDraft('left_by_worker_3')]),
    );
    const cluster = startWorkers();
    try {
      // A start on a loaded machine takes a while; a cluster that exits instead says why.
      await waitForValue(
        'the cluster to serve',
        () => cluster.stdout.includes('with 2 workers') || cluster.child.exitCode !== null,
        60_000,
      );
      expect(cluster.stdout, cluster.stderr).toContain('with 2 workers');
      const receiptTools = () => {
        const database = new Database(join(dataDirectory, 'gateway.db'), { readonly: true });
        try {
          return database.prepare('SELECT tool FROM receipts').pluck().all() as string[];
        } finally {
          database.close();
        }
      };
      expect(receiptTools()).toContain('left_by_worker_3');
      // Log lines come asynchronously on another pipe than stdout: wait for both.
      const listening = await waitForValue('both workers to be reported', () => {
        const lines = cluster.lines.filter((line) => line.msg === 'worker listening');
        return lines.length === 2 ? lines : undefined;
      });
      const pids = listening.map((line) => line.pid as number);
      expect(new Set(pids).size).toBe(2);
      // The primary was started without the young generation bound (plain `node main.js`); each worker has it.
      if (process.platform === 'linux') {
        for (const pid of pids) expect((await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0')).toContain(SEMI_SPACE_FLAG);
      }

      // Sign-in and consent with each step on a new connection: both workers take part, the approval holds.
      const beforeApproval = cluster.lines.length;
      await approveThroughCluster();
      const pageWorkers = workerPids(
        cluster,
        beforeApproval,
        (line) => typeof line.msg === 'string' && /request completed/.test(line.msg as string),
      );
      expect(pageWorkers.size).toBe(2);

      // Calls on new connections reach both workers; every one is answered with the order.
      const before = cluster.lines.length;
      for (let index = 0; index < 8; index += 1) {
        const answer = await callOnNewConnection();
        expect(answer.status).toBe(200);
        expect(answer.text).toContain('Ada Lovelace');
      }
      const served = await waitForValue('both workers to log calls', () => {
        const seen = workerPids(cluster, before, (line) => line.msg === 'tool call' && line.outcome === 'ok');
        return seen.size === 2 ? seen : undefined;
      });
      expect([...served].sort()).toEqual([...pids].sort());

      // A scrape reaches one worker; each answers with the cluster's metrics: the calls of both counted, the
      // sessions (shared state every worker reads) once.
      const scrapes = await onFreshConnections(() =>
        Promise.all(
          [1, 2, 3, 4].map(async () => {
            const response = await fetch(`http://127.0.0.1:${workspace.port}/metrics`, {
              headers: { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` },
            });
            expect(response.status).toBe(200);
            return response.text();
          }),
        ),
      );
      for (const text of scrapes) {
        expect(text).toMatch(/^gateway_tool_calls_total\{source="orders",tool="get_order",outcome="allowed"\} 8$/m);
        expect(text).toMatch(/^gateway_sessions_open 1$/m);
      }

      // Revoked through the CLI (the shared database, not a worker): both workers refuse at once.
      await workspace.cli(['sessions', 'revoke', sessionId]);
      const afterRevoke = cluster.lines.length;
      for (let index = 0; index < 8; index += 1) {
        const answer = await callOnNewConnection();
        expect(answer.status).toBe(401);
        expect(answer.text).toContain('revoked');
      }
      const refused = await waitForValue('both workers to refuse', () => {
        const seen = workerPids(cluster, afterRevoke, (line) => line.msg === 'mcp request refused' && line.reason === 'session_revoked');
        return seen.size === 2 ? seen : undefined;
      });
      expect([...refused].sort()).toEqual([...pids].sort());

      // A worker that dies is replaced (same worker number, new process).
      const victim = listening.find((line) => line.worker === 2)!.pid as number;
      process.kill(victim, 'SIGKILL');
      const replacement = await waitForValue('worker 2 to restart', () =>
        cluster.lines.find((line) => line.msg === 'worker listening' && line.worker === 2 && line.pid !== victim),
      );
      const live = [pids.find((pid) => pid !== victim)!, replacement.pid as number];

      // SIGTERM to the primary stops every worker, then the primary.
      cluster.child.kill('SIGTERM');
      expect(await cluster.exited).toBe(0);
      for (const pid of live) expect(isAlive(pid)).toBe(false);
      // Stopped cleanly, every worker's receipts are in the database: no journal or journal lock is left.
      expect((await readdir(dataDirectory)).filter((name) => name.startsWith('receipts-journal-'))).toEqual([]);
    } finally {
      if (cluster.child.exitCode === null) cluster.child.kill('SIGKILL');
    }
  }, 120_000);
});
