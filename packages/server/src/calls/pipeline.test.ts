import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig, type LoadedConfig, type SessionState } from '@gateway/core';
import { createVault } from '@gateway/runtime';
import { temporaryDirectory } from '../../../../test-support/cli.js';
import { lockedOperation, lockWith, startRecordingUpstream } from '../../test/support/fixtures.js';
import { createExecutor, NO_CREDENTIALS } from '../execute/index.js';
import type { McpCaller } from '../calls/caller.js';
import { PublicationRegistry } from '../publications/registry.js';
import { createReceiptLog, type ReceiptLog } from '../receipts/log.js';
import { receiptMigrations, sqliteReceiptStorage } from '../receipts/sqlite/index.js';
import { openDatabase, type SqliteDatabase } from '../store/sqlite/database.js';
import type { CallTelemetry, EndedCall } from './call-telemetry.js';
import { createCallPipeline, type CallPipeline, type PersonActionGate } from './pipeline.js';

let upstream: Awaited<ReturnType<typeof startRecordingUpstream>>;
let directory: { path: string; cleanup: () => Promise<void> };
let database: SqliteDatabase;
let log: ReceiptLog;
let pipeline: CallPipeline;
let loadedConfig: LoadedConfig;
let sessionState: SessionState = 'open';
const registry = new PublicationRegistry();
const agent = new Agent();

beforeAll(async () => {
  upstream = await startRecordingUpstream((request, response) => {
    const status = request.path === '/missing' ? 404 : 200;
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(status === 200 ? '{"ok":true}' : '{"error":"not found"}');
  });
  const server = upstream.url;
  registry.replace(
    lockWith([
      lockedOperation({ tool: 'ping', method: 'GET', path: '/ping', server }),
      lockedOperation({ tool: 'missing', method: 'GET', path: '/missing', server }),
      lockedOperation({ tool: 'outside', method: 'GET', path: '/outside', server }),
      lockedOperation({ tool: 'changed', method: 'GET', path: '/changed', server }),
      lockedOperation({ tool: 'drifted', method: 'GET', path: '/drifted', server }),
      lockedOperation({
        tool: 'secured',
        method: 'GET',
        path: '/secured',
        server,
        security: [{ api_key: [] }],
        securitySchemes: { api_key: { type: 'apiKey', in: 'header', name: 'X-API-Key' } },
      }),
    ]),
  );
  registry.setBlocked('orders', new Map([['drifted', 'the live description changed']]));
  directory = await temporaryDirectory('gateway-pipeline-');
  const loaded: LoadedConfig = parseConfig(
    'gateway:\n  url: http://127.0.0.1:8080\nsources:\n  orders:\n    kind: openapi\n    document: openapi.yaml\n    credentials:\n      ' +
      'api_key: { type: apiKey, secret: orders-key }\n',
    join(directory.path, 'gateway.yaml'),
  );
  database = openDatabase(join(directory.path, 'gateway.db'), receiptMigrations);
  log = await createReceiptLog({
    ...sqliteReceiptStorage(database),
    vault: await createVault(loaded, { env: { PATH: process.env.PATH } }),
    loaded,
  });
  pipeline = pipelineOver(loaded, pino({ level: 'silent' }));
  loadedConfig = loaded;
});

/** A pipeline over the test's registry, upstream and receipt log. */
function pipelineOver(
  loaded: LoadedConfig | undefined,
  logger: Logger,
  gates: readonly PersonActionGate[] = [],
  telemetry?: CallTelemetry,
  receipts: ReceiptLog = log,
): CallPipeline {
  return createCallPipeline({
    registry,
    authorizer: { authenticate: async () => ({ ok: false, status: 401, headers: {}, body: null }), sessionState: () => sessionState },
    executor: createExecutor({
      credentials: { resolve: async () => NO_CREDENTIALS },
      dispatcherFor: () => agent,
      limitsFor: () => ({ connectMs: 1000, totalMs: 2000, maxResponseBytes: 10_000 }),
    }),
    ...(loaded ? { loaded } : {}),
    receipts,
    logger,
    gates,
    ...(telemetry ? { telemetry } : {}),
  });
}

afterAll(async () => {
  await log?.close();
  database?.close();
  await upstream?.close();
  await agent.close();
  await directory?.cleanup();
});

function caller(): McpCaller {
  const snapshot = registry.snapshot();
  const tools = new Map<string, string>();
  for (const name of ['ping', 'missing', 'drifted', 'secured']) tools.set(name, snapshot.tools.get(name)!.entry.fingerprint);
  tools.set('changed', 'sha256:approved-before-it-changed');
  return { sessionId: 'session-4', subject: 'bob', clientId: 'client-9', tools, logins: new Set(), expiresAt: Date.now() + 60_000 };
}

describe('the call pipeline', () => {
  it.each([
    ['no_such_tool', 'TOOL_UNKNOWN', 'invalid-params'],
    ['outside', 'TOOL_NOT_IN_SESSION', 'invalid-params'],
    ['changed', 'TOOL_CHANGED_SINCE_APPROVAL', 'act'],
    ['drifted', 'TOOL_BLOCKED_BY_DRIFT', 'result'],
    ['secured', 'LOGIN_NOT_IN_SESSION', 'result'],
  ] as const)('refuses %s with %s, receipts the refusal, and never reaches the upstream', async (name, reason, kind) => {
    const before = upstream.requests.length;
    const { answer, receipt: committed } = await pipeline.callTool(caller(), name, { q: 1 }, undefined);
    const receipt = await committed;
    expect(answer.kind).toBe(kind);
    if (answer.kind === 'result') expect(answer.result.isError).toBe(true);
    expect(receipt).toMatchObject({
      tool: name,
      // Changed since approval: a person must act (approve again), its own receipt outcome.
      outcome: kind === 'act' ? 'action-required' : 'denied',
      reason,
      session: 'session-4',
      person: 'bob',
      clientId: 'client-9',
      resultDigest: null,
    });
    expect(await await log.store.get(receipt!.index)).toEqual(receipt);
    expect(upstream.requests.length).toBe(before);
  });

  it.each([
    ['revoked', 'SESSION_REVOKED'],
    ['expired', 'SESSION_EXPIRED'],
  ] as const)('refuses every call of a session that was %s, receipted %s', async (state, reason) => {
    sessionState = state;
    try {
      const { answer, receipt: committed } = await pipeline.callTool(caller(), 'ping', {}, undefined);
      const receipt = await committed;
      expect(answer).toMatchObject({ kind: 'result', result: { isError: true } });
      expect(receipt).toMatchObject({ outcome: 'denied', reason });
    } finally {
      sessionState = 'open';
    }
  });

  it('an allowed call is executed and receipted allowed, with the upstream status and a result digest', async () => {
    const { answer, receipt: committed } = await pipeline.callTool(caller(), 'ping', {}, undefined);
    const receipt = await committed;
    expect(answer).toMatchObject({ kind: 'result', result: { structuredContent: { ok: true } } });
    expect(receipt).toMatchObject({
      outcome: 'allowed',
      reason: null,
      upstreamStatus: 200,
      source: 'orders',
      publication: 'publication-1',
    });
    expect(receipt!.resultDigest).toMatch(/^hmac-sha256:/);
  });

  it('without a journal, a call whose receipt could not be committed is not answered with its result', async () => {
    // PostgreSQL (or receipts.journal: false): the commit is what makes a receipt durable; a commit that failed (the
    // database restarting) leaves the call without a receipt, so its result must not go out as if it had one.
    const uncommitted: ReceiptLog = Object.assign(Object.create(log) as ReceiptLog, {
      isDurableOnReturn: false,
      record: () => Promise.reject(new Error('Connection terminated unexpectedly')),
    });
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    await expect(pipelineOver(loadedConfig, logger, [], undefined, uncommitted).callTool(caller(), 'ping', {}, undefined)).rejects.toThrow(
      expect.objectContaining({ code: 'RECEIPT_WRITE_FAILED', message: expect.stringContaining('ping') }),
    );
    expect(lines.map((line) => JSON.parse(line).code)).toContain('RECEIPT_WRITE_FAILED');
  });

  it('the arguments digest is made once the upstream request is out, before its answer, and is the one receipted', async () => {
    const made: Array<{ digest: string; upstreamRequestsSeen: number }> = [];
    const original = log.argumentsDigest;
    log.argumentsDigest = (value) => {
      const digest = original(value);
      made.push({ digest, upstreamRequestsSeen: upstream.requests.length });
      return digest;
    };
    try {
      const before = upstream.requests.length;
      const receipt = await (await pipeline.callTool(caller(), 'ping', {}, undefined)).receipt;
      // Made in the same tick the request was sent: the upstream (in this process) had not read it yet.
      expect(made).toEqual([{ digest: receipt!.argumentsDigest, upstreamRequestsSeen: before }]);
      expect(upstream.requests.length).toBe(before + 1);
      expect(receipt).toMatchObject({ outcome: 'allowed', argumentsDigest: original({}) });
    } finally {
      log.argumentsDigest = original;
    }
  });

  it('an upstream error status is receipted error UPSTREAM_ERROR_STATUS', async () => {
    const { answer, receipt: committed } = await pipeline.callTool(caller(), 'missing', {}, undefined);
    const receipt = await committed;
    expect(answer).toMatchObject({ kind: 'result', result: { isError: true } });
    expect(receipt).toMatchObject({ outcome: 'error', reason: 'UPSTREAM_ERROR_STATUS', upstreamStatus: 404 });
  });

  it('logs one tool call line per call once its answer is out, also for calls that end in the same turn', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logged = pipelineOver(undefined, pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) }));
    const turns = async (count: number) => {
      for (let turn = 0; turn < 100 && lines.length < count; turn += 1) await new Promise((resolve) => setImmediate(resolve));
    };
    await logged.callTool(caller(), 'ping', {}, undefined);
    // Answered: its line follows on a later turn of the event loop.
    expect(lines).toEqual([]);
    await turns(1);
    const tools = ['ping', 'missing', 'ping', 'missing', 'ping'];
    await Promise.all(tools.map((name) => logged.callTool(caller(), name, {}, undefined)));
    await turns(1 + tools.length);
    expect(lines.map((line) => [line.msg, line.tool, line.outcome]).sort()).toEqual(
      ['ping', ...tools].map((name) => ['tool call', name, name === 'ping' ? 'ok' : 'upstream-error']).sort(),
    );
    for (const line of lines) expect(line).not.toHaveProperty('arguments');
  });

  it('decide has no side effects: no receipt until the call is made', async () => {
    const size = (await log.store.head()).size;
    expect((await pipeline.decide(caller(), 'outside')).verdict).toMatchObject({ kind: 'deny', reason: 'TOOL_NOT_IN_SESSION' });
    expect((await log.store.head()).size).toBe(size);
  });

  it('an asynchronous gate reports an approval: the call runs on it once, a second use is refused', async () => {
    let uses = 0;
    const asked: string[] = [];
    const gate: PersonActionGate = {
      appliesTo: (tool) => tool.entry.tool === 'ping',
      async pendingAction(_caller, tool, _argumentsValue, argumentsDigest) {
        asked.push(`${tool.entry.tool} ${argumentsDigest.length > 0}`);
        return { callApproval: 'approved', approvalId: 'approval-1', use: async () => uses++ === 0 };
      },
    };
    const gated = pipelineOver(loadedConfig, pino({ level: 'silent' }), [gate]);
    const size = (await log.store.head()).size;
    const pings = () => upstream.requests.filter((request) => request.path === '/ping').length;
    const pingsBefore = pings();
    const first = await gated.callTool(caller(), 'ping', {}, undefined);
    expect(first.answer.kind === 'result' && first.answer.result.isError).toBeFalsy();
    const second = await gated.callTool(caller(), 'ping', {}, undefined);
    expect(second.answer).toMatchObject({ kind: 'result', result: { isError: true } });
    await second.receipt;
    expect(await log.store.get(size + 1)).toMatchObject({ outcome: 'denied', reason: 'CALL_APPROVAL_UNAVAILABLE' });
    expect(pings()).toBe(pingsBefore + 1);
    // A tool the gate does not apply to: not asked, and its arguments are not digested at decision time.
    const other = await gated.decide(caller(), 'missing', { q: 1 });
    expect(other.argumentsDigest).toBeUndefined();
    expect(asked).toEqual(['ping true', 'ping true']);
  });

  it('tells telemetry of every call once, at its receipt point, allowed, refused or failed, with the receipt it became', async () => {
    const told: Array<{ call: EndedCall; written: Promise<unknown> }> = [];
    const observed = pipelineOver(undefined, pino({ level: 'silent' }), [], { callEnded: (call, written) => told.push({ call, written }) });
    const receipts = [];
    for (const name of ['ping', 'missing', 'outside', 'no_such_tool'])
      receipts.push(await (await observed.callTool(caller(), name, {}, undefined)).receipt);
    expect(told.map(({ call }) => [call.tool, call.source, call.outcome, call.reason])).toEqual([
      ['ping', 'orders', 'allowed', null],
      ['missing', 'orders', 'error', 'UPSTREAM_ERROR_STATUS'],
      ['outside', 'orders', 'denied', 'TOOL_NOT_IN_SESSION'],
      ['no_such_tool', null, 'denied', 'TOOL_UNKNOWN'],
    ]);
    for (const [index, { call, written }] of told.entries()) {
      // The executor's time only for calls that reached it; the marks in order.
      expect(call.upstreamMs === undefined).toBe(index >= 2);
      expect(call.startedMark).toBeLessThanOrEqual(call.decidedMark!);
      expect(call.decidedMark!).toBeLessThanOrEqual(call.endedMark);
      expect(await written).toBe(receipts[index]);
    }
  });
});
