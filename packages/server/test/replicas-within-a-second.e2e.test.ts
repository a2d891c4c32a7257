/**
 * Three replicas (startGateway in this process, each with a data directory and a port of its own, one canonical
 * URL) on one PostgreSQL database, with real OAuth sessions from the gateway's own authorization server: a session
 * revoked through the admin API of replica 1 is refused by replica 3 within a second, and a drift block recorded by
 * whichever replica holds the `drift-leader` lease holds on all three within a second of the first refusal.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PeopleDirectory } from '@gateway/runtime';
import { postgresForThisFile } from '../../../test-support/postgres.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import { approvedSession, sharedKeysEnv } from './support/cluster.js';
import { mcpRequest } from './support/fixtures.js';
import { HARNESS_ADMIN_TOKEN, prepareWorkspace, type Workspace } from './support/harness.js';
import { freePort } from './support/net.js';
import { PERSON } from './oauth-support/authorization-server.js';

/** The promise: what one replica changes holds on every other one within this bound. */
const WITHIN_MS = 1_000;
/** How often the test asks every replica while it waits (bounded by the waits below). */
const PROBE_INTERVAL_MS = 20;

const postgres = postgresForThisFile();
let workspace: Workspace;
let original: string;
/** Replica n's gateway and the base URL it listens on (the canonical URL, a load balancer's, is replica 1's). */
const replicas: Array<{ gateway: RunningGateway; base: string }> = [];

/** Replica 1 on the workspace's config; the others on copies with a data directory of their own (other hosts). */
async function startReplica(index: number): Promise<void> {
  let configPath = workspace.configPath;
  const port = index === 1 ? workspace.port : await freePort();
  if (index > 1) {
    configPath = join(workspace.directory, `gateway-${index}.yaml`);
    const config = await readFile(workspace.configPath, 'utf8');
    await writeFile(configPath, config.replace('gateway:\n', `gateway:\n  dataDirectory: .gateway-${index}\n`));
  }
  const gateway = await startGateway({
    configPath,
    lockPath: workspace.lockPath,
    env: workspace.env,
    logger: pino({ level: 'silent' }),
    shutdownGraceMs: 2_000,
    ...(index > 1 ? { listen: `127.0.0.1:${port}` } : {}),
  });
  replicas.push({ gateway, base: `http://127.0.0.1:${port}` });
}

/** One 2026-07-28 tools/call of get_order on replica `index` (1-based); `answeredAt`: when its answer was read. */
async function callOn(index: number, token: string): Promise<{ status: number; text: string; answeredAt: number }> {
  const response = await fetch(`${replicas[index - 1]!.base}/mcp`, {
    method: 'POST',
    ...mcpRequest('2026-07-28', 'tools/call', { name: 'get_order', arguments: { orderId: 'ord_1001' } }, token),
  });
  const text = await response.text();
  return { status: response.status, text, answeredAt: Date.now() };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  workspace = await prepareWorkspace({
    configExtra: ['storage:\n  kind: postgres\n  url: database-url', 'auth:\n  sessions:\n    lifetimeChoicesSeconds: [3600]'].join('\n'),
    driftIntervalSeconds: 0.5,
  });
  original = await readFile(workspace.documentPath, 'utf8');
  workspace.env.GATEWAY_SECRET_DATABASE_URL = await postgres.server.createDatabase();
  // Shared by the replicas through the vault: a token replica 1 issues verifies on replica 3; each signs the one log.
  Object.assign(workspace.env, await sharedKeysEnv());
  await new PeopleDirectory(join(workspace.directory, '.gateway', 'people.json')).add(PERSON.name, PERSON.password);
  for (const index of [1, 2, 3]) await startReplica(index);
}, 180_000);

afterAll(async () => {
  if (original !== undefined) await writeFile(workspace.documentPath, original).catch(() => undefined);
  for (const { gateway } of replicas.splice(0).reverse()) await gateway.close();
  await workspace?.cleanup();
});

describe('three replicas on one PostgreSQL', () => {
  it('a session revoked through the admin API of replica 1 is refused by replica 3 within a second', async () => {
    // Approved through replica 1 (the canonical URL, the authorization server's issuer).
    const { accessToken: token, sessionId } = await approvedSession(replicas[0]!.base, 'replicas test');
    // Replica 3 serves the session (and so holds it in its caches) before the revocation.
    const before = await callOn(3, token);
    expect(before.status, before.text).toBe(200);
    expect(before.text).toContain('Ada Lovelace');

    const revokedAt = Date.now();
    const revoked = await fetch(`${replicas[0]!.base}/admin/sessions/${sessionId}/revoke`, {
      method: 'POST',
      headers: { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'replicas test' }),
    });
    expect(revoked.status, await revoked.clone().text()).toBe(200);
    let refused: Awaited<ReturnType<typeof callOn>> | undefined;
    while (refused === undefined && Date.now() - revokedAt < 5_000) {
      const answer = await callOn(3, token);
      if (answer.status === 401) refused = answer;
      else await sleep(PROBE_INTERVAL_MS);
    }
    expect(refused, 'replica 3 never refused the revoked session').toBeDefined();
    expect(refused!.text).toContain('revoked');
    const delayMs = refused!.answeredAt - revokedAt;
    console.info(`revocation on replica 1 refused on replica 3 after ${delayMs} ms`);
    expect(delayMs).toBeLessThan(WITHIN_MS);
    // And it stays refused everywhere.
    for (const index of [1, 2, 3]) expect((await callOn(index, token)).status).toBe(401);
  }, 60_000);

  it('a drift block recorded by the drift leader holds on every replica within a second of the first refusal', async () => {
    const { accessToken: token } = await approvedSession(replicas[0]!.base, 'replicas test');
    for (const index of [1, 2, 3]) {
      const answer = await callOn(index, token);
      expect(answer.text, `replica ${index}`).toContain('Ada Lovelace');
    }
    // Exactly one replica checks the descriptions: the holder of the storage's lease.
    const leaders = replicas.filter(({ gateway }) => (gateway.drift as { isLeader?: () => boolean } | undefined)?.isLeader?.());
    expect(leaders).toHaveLength(1);

    // getOrder gains a required query parameter: its request changes, so the operation is blocked.
    await writeFile(
      workspace.documentPath,
      original.replace(
        '      operationId: getOrder\n',
        '      operationId: getOrder\n      parameters:\n        - name: fields\n          in: query\n          required: true\n' +
          '          schema: { type: string }\n',
      ),
    );
    const firstRefusal: Array<number | undefined> = [undefined, undefined, undefined];
    const deadline = Date.now() + 15_000;
    while (firstRefusal.some((at) => at === undefined) && Date.now() < deadline) {
      const answers = await Promise.all([1, 2, 3].map((index) => callOn(index, token)));
      answers.forEach((answer, position) => {
        if (firstRefusal[position] === undefined && answer.text.includes('drift')) firstRefusal[position] = answer.answeredAt;
      });
      await sleep(PROBE_INTERVAL_MS);
    }
    expect(
      firstRefusal.every((at) => at !== undefined),
      `refused on replicas: ${JSON.stringify(firstRefusal)}`,
    ).toBe(true);
    const times = firstRefusal as number[];
    const spreadMs = Math.max(...times) - Math.min(...times);
    console.info(`drift block held on all three replicas within ${spreadMs} ms of the first refusal`);
    expect(spreadMs).toBeLessThan(WITHIN_MS);
    // The block holds: every replica keeps refusing the drifted tool.
    for (const index of [1, 2, 3]) {
      const answer = await callOn(index, token);
      expect(answer.text, `replica ${index}`).toContain('operation changed in the live description');
      expect(answer.text).not.toContain('Ada Lovelace');
    }
  }, 60_000);
});
