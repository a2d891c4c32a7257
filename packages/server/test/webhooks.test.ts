/**
 * Webhooks end to end: a call through /mcp (SDK clients of both eras) → its receipt → a signed CloudEvent at
 * real receivers on 127.0.0.1; the `gateway webhooks …` commands run as subprocesses over the admin API.
 */
import { HTTP } from 'cloudevents';
import { pino } from 'pino';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { parseConfig } from '@gateway/core';
import { runGateway } from '../../../test-support/cli.js';
import { startGateway, type RunningGateway } from '../src/gateway.js';
import type { McpAuthorizer, McpCaller } from '../src/calls/caller.js';
import { prepareWorkspace, type Workspace } from './support/harness.js';
import { newWebhookSecret, startWebhookReceiver, waitFor, type ReceivedRequest, type WebhookReceiver } from './support/webhook-receiver.js';

const ADMIN_TOKEN = 'webhooks-admin-token-9b2e';
const SESSION_TOOLS = ['get_order', 'search_orders'];
const auditSecret = newWebhookSecret();
const denialsSecret = newWebhookSecret();
const denialsPreviousSecret = newWebhookSecret();
const detailedSecret = newWebhookSecret();
const anchorSecret = newWebhookSecret();
const flakySecret = newWebhookSecret();
const RECEIPTED = 'io.service.call.receipted';
const CHECKPOINT = 'io.service.receipts.checkpoint';

let workspace: Workspace;
let gateway: RunningGateway;
let audit: WebhookReceiver;
let denials: WebhookReceiver;
/** `data: detailed`. */
let detailed: WebhookReceiver;
/** Subscribed to receipts and checkpoints (`types:`). */
let anchor: WebhookReceiver;
/** Default onExhausted (pause), a small retry budget; a test takes it down and brings it back. */
let flaky: WebhookReceiver;
/** What the audit receiver answers (a test switches it to 503 to make events fail). */
let auditStatus = 204;

beforeAll(async () => {
  audit = await startWebhookReceiver(() => ({ status: auditStatus }));
  denials = await startWebhookReceiver();
  detailed = await startWebhookReceiver();
  anchor = await startWebhookReceiver();
  flaky = await startWebhookReceiver();
  workspace = await prepareWorkspace({
    configExtra: [
      'receipts:',
      '  checkpoint: { everyReceipts: 2 }',
      'webhooks:',
      '  audit:',
      `    url: ${audit.url}`,
      '    secret: audit-webhook-secret',
      '    retry: { attempts: 2, initialDelayMs: 10, maxDelayMs: 50, timeoutMs: 2000 }',
      '    onExhausted: skip',
      '  denials:',
      `    url: ${denials.url}`,
      '    secret: denials-webhook-secret',
      '    previousSecret: denials-webhook-secret-old',
      '    outcomes: [denied]',
      '  detailed:',
      `    url: ${detailed.url}`,
      '    secret: detailed-webhook-secret',
      '    data: detailed',
      '  anchor:',
      `    url: ${anchor.url}`,
      '    secret: anchor-webhook-secret',
      `    types: [${RECEIPTED}, ${CHECKPOINT}]`,
      '  flaky:',
      `    url: ${flaky.url}`,
      '    secret: flaky-webhook-secret',
      '    retry: { attempts: 3, initialDelayMs: 10, maxDelayMs: 50, timeoutMs: 2000 }',
    ].join('\n'),
  });
  Object.assign(workspace.env, {
    GATEWAY_SECRET_DETAILED_WEBHOOK_SECRET: detailedSecret,
    GATEWAY_SECRET_ANCHOR_WEBHOOK_SECRET: anchorSecret,
    GATEWAY_SECRET_FLAKY_WEBHOOK_SECRET: flakySecret,
    GATEWAY_SECRET_ADMIN_TOKEN: ADMIN_TOKEN,
    GATEWAY_SECRET_AUDIT_WEBHOOK_SECRET: auditSecret,
    GATEWAY_SECRET_DENIALS_WEBHOOK_SECRET: denialsSecret,
    GATEWAY_SECRET_DENIALS_WEBHOOK_SECRET_OLD: denialsPreviousSecret,
  });
  const authorizer = ({ registry }: { registry: RunningGateway['registry'] }): McpAuthorizer => ({
    async authenticate() {
      const snapshot = registry.snapshot();
      const tools = new Map<string, string>();
      for (const name of SESSION_TOOLS) tools.set(name, snapshot.tools.get(name)!.entry.fingerprint);
      const caller: McpCaller = {
        sessionId: 'session-31',
        subject: 'alice@example.com',
        clientId: 'client-webhooks',
        tools,
        logins: new Set(['orders/api_key']),
        expiresAt: Date.now() + 3_600_000,
      };
      return { ok: true, caller };
    },
    sessionState: () => 'open',
  });
  gateway = await startGateway({
    configPath: workspace.configPath,
    lockPath: workspace.lockPath,
    env: workspace.env,
    logger: pino({ level: 'silent' }),
    shutdownGraceMs: 2_000,
    authorizerOverride: authorizer,
  });
});

afterAll(async () => {
  await gateway?.close();
  await workspace?.cleanup();
  for (const receiver of [audit, denials, detailed, anchor, flaky]) await receiver?.close();
});

async function call(era: 'modern' | 'legacy', name: string, args: Record<string, unknown>): Promise<unknown> {
  const headers = { authorization: 'Bearer client-token' };
  if (era === 'modern') {
    const client = new Client({ name: 'v2-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.mcpUrl), { requestInit: { headers } }));
    try {
      return await client.callTool({ name, arguments: args });
    } finally {
      await client.close();
    }
  }
  const client = new LegacyClient({ name: 'v1-test', version: '1.0.0' });
  await client.connect(new LegacyTransport(new URL(gateway.mcpUrl), { requestInit: { headers } }));
  try {
    return await client.callTool({ name, arguments: args });
  } finally {
    await client.close();
  }
}

async function cli(args: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const result = await runGateway(args, { cwd: workspace.directory, env: workspace.env });
  return { exitCode: result.exitCode, stdout: String(result.stdout), stderr: String(result.stderr) };
}

async function receiptShown(id: string): Promise<Record<string, unknown>> {
  const shown = await cli(['receipts', 'show', id, '--json']);
  expect(shown.exitCode, shown.stderr).toBe(0);
  return JSON.parse(shown.stdout) as Record<string, unknown>;
}

type Envelope = {
  id: string;
  type: string;
  subject: string;
  sequence: string;
  data: { tool: string; outcome: string; receipt: string; details?: Record<string, unknown> };
};

/** The body read with the CloudEvents SDK (which validates the envelope), as plain JSON. */
function readEvent(request: ReceivedRequest): Envelope {
  const event = HTTP.toEvent({ headers: request.headers, body: request.body });
  if (Array.isArray(event)) throw new Error('expected one event');
  return JSON.parse(JSON.stringify(event)) as Envelope;
}

const lastAcknowledged = (receiver: WebhookReceiver) => receiver.requests.filter((request) => request.status < 300).at(-1)!;

describe.each(['modern', 'legacy'] as const)('a call through /mcp with a %s SDK client', (era) => {
  it(
    'reaches the receiver as a signed CloudEvent whose subject is the session and whose data is exactly ' +
      '{tool, outcome, receipt: "receipt-<n>"}; data: detailed adds the receipt as details',
    async () => {
      const before = audit.requests.length;
      const beforeDetailed = detailed.requests.length;
      await call(era, 'get_order', { orderId: 'ord_1001' });
      await waitFor(() => audit.requests.length > before && detailed.requests.length > beforeDetailed, 'the audit and detailed events');
      const request = audit.requests.at(-1)!;
      expect(new Webhook(auditSecret).verify(request.body, request.headers as Record<string, string>)).toBeTruthy();
      expect(request.headers['content-type']).toMatch(/^application\/cloudevents\+json/);
      const event = readEvent(request);
      expect(event.data.receipt).toMatch(/^receipt-\d+$/);
      expect(Object.keys(event.data).sort()).toEqual(['outcome', 'receipt', 'tool']);
      const receipt = await receiptShown(event.data.receipt);
      const rich = detailed.requests.at(-1)!;
      expect(new Webhook(detailedSecret).verify(rich.body, rich.headers as Record<string, string>)).toBeTruthy();
      const richEvent = readEvent(rich);
      expect(Object.keys(richEvent.data).sort()).toEqual(['details', 'outcome', 'receipt', 'tool']);
      expect(richEvent.data).toEqual({ tool: 'get_order', outcome: 'allowed', receipt: receipt.id, details: receipt });
      expect(event).toEqual({
        specversion: '1.0',
        id: `evt_${String(receipt.id)}_audit`,
        type: 'io.service.call.receipted',
        source: 'service/audit',
        subject: 'session-31',
        time: receipt.time,
        datacontenttype: 'application/json',
        data: { tool: 'get_order', outcome: 'allowed', receipt: receipt.id },
        sequence: event.sequence,
      });
      expect(request.headers['webhook-id']).toBe(event.id);
      expect(JSON.stringify(event)).not.toContain('canary-orders-key');
      expect(rich.body).not.toContain('canary-orders-key');
    },
  );

  it(
    'a denied call reaches both the audit endpoint and the denied-only endpoint, ' + 'signed with both secrets during the rotation',
    async () => {
      const beforeAudit = audit.requests.length;
      const beforeDenials = denials.requests.length;
      await expect(call(era, 'delete_order', { orderId: 'ord_1001' })).rejects.toThrow(/delete_order/);
      await waitFor(() => audit.requests.length > beforeAudit && denials.requests.length > beforeDenials, 'both events');
      const event = readEvent(denials.requests.at(-1)!);
      expect(event.data.outcome).toBe('denied');
      expect(await receiptShown(event.data.receipt)).toMatchObject({
        tool: 'delete_order',
        reason: 'TOOL_NOT_IN_SESSION',
        session: 'session-31',
      });
      expect(readEvent(audit.requests.at(-1)!).data.receipt).toBe(event.data.receipt);
      const headers = denials.requests.at(-1)!.headers as Record<string, string>;
      expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
      expect(new Webhook(denialsSecret).verify(denials.requests.at(-1)!.body, headers)).toBeTruthy();
      expect(new Webhook(denialsPreviousSecret).verify(denials.requests.at(-1)!.body, headers)).toBeTruthy();
    },
  );
});

describe('gateway webhooks (CLI over the admin API)', () => {
  it('the denied-only endpoint got only denied events, each endpoint with its own gap-free sequence', async () => {
    const sequences = (receiver: WebhookReceiver) =>
      receiver.requests.filter((request) => request.status < 300).map((request) => Number(readEvent(request).sequence));
    expect(denials.requests.every((request) => readEvent(request).data.outcome === 'denied')).toBe(true);
    expect(sequences(denials)).toEqual(Array.from({ length: denials.requests.length }, (_, index) => index + 1));
    expect(sequences(audit)).toEqual(Array.from({ length: sequences(audit).length }, (_, index) => index + 1));
  });

  it('list and deliveries show each endpoint and its events in sequence order', async () => {
    // Without `types:`, every receipt's type: calls, approval decisions, console actions.
    const DEFAULT_TYPES = [RECEIPTED, 'io.service.approval.receipted', 'io.service.console.receipted'];
    const listed = await cli(['webhooks', 'list', '--json']);
    expect(listed.exitCode, listed.stderr).toBe(0);
    const endpoints = (JSON.parse(listed.stdout) as { endpoints: Array<Record<string, unknown>> }).endpoints;
    const all = ['allowed', 'denied', 'action-required', 'error'];
    expect(
      endpoints.map((endpoint) => [
        endpoint.name,
        endpoint.outcomes,
        endpoint.types,
        endpoint.onExhausted,
        endpoint.rotating,
        endpoint.state,
      ]),
    ).toEqual([
      ['audit', all, DEFAULT_TYPES, 'skip', false, 'active'],
      ['denials', ['denied'], DEFAULT_TYPES, 'pause', true, 'active'],
      ['detailed', all, DEFAULT_TYPES, 'pause', false, 'active'],
      ['anchor', all, [RECEIPTED, CHECKPOINT], 'pause', false, 'active'],
      ['flaky', all, DEFAULT_TYPES, 'pause', false, 'active'],
    ]);
    const human = await cli(['webhooks', 'list']);
    expect(human.stdout).toContain('active, rotating secret');
    expect(human.stdout).not.toContain(denialsSecret);

    const deliveries = await cli(['webhooks', 'deliveries', 'audit', '--json']);
    expect(deliveries.exitCode, deliveries.stderr).toBe(0);
    const rows = (JSON.parse(deliveries.stdout) as { deliveries: Array<{ sequence: number; status: string; eventId: string }> }).deliveries;
    expect(rows.map((row) => row.sequence)).toEqual(Array.from({ length: rows.length }, (_, index) => index + 1));
    expect(rows.every((row) => row.status === 'delivered')).toBe(true);
    expect(rows.map((row) => row.eventId)).toEqual(audit.requests.map((request) => request.headers['webhook-id']));
  });

  it('events failed while the receiver was down are delivered again, in order, by `replay --failed`', async () => {
    auditStatus = 503;
    const before = audit.requests.length;
    await call('modern', 'get_order', { orderId: 'ord_1001' });
    await call('legacy', 'search_orders', {});
    // Two attempts each (retry.attempts: 2), then failed.
    await waitFor(() => audit.requests.length === before + 4, 'two attempts per event');
    const listed = await cli(['webhooks', 'deliveries', 'audit', '--status', 'failed', '--json']);
    const failed = (JSON.parse(listed.stdout) as { deliveries: Array<{ sequence: number; eventId: string }> }).deliveries;
    expect(failed).toHaveLength(2);

    auditStatus = 200;
    const replayed = await cli(['webhooks', 'replay', 'audit', '--failed']);
    expect(replayed.exitCode, replayed.stderr).toBe(0);
    expect(replayed.stdout).toContain('2 events queued again');
    await waitFor(() => audit.requests.filter((request) => request.status === 200).length >= 2, 'the replayed events');
    const redelivered = audit.requests.filter((request) => request.status === 200);
    expect(redelivered.map((request) => request.headers['webhook-id'])).toEqual(failed.map((row) => row.eventId));
    expect(redelivered.map((request) => Number(readEvent(request).sequence))).toEqual(failed.map((row) => row.sequence));
  });

  it('test sends a signed test event and reports the acknowledgement; a refusing receiver makes it exit non-zero', async () => {
    auditStatus = 204;
    const sent = await cli(['webhooks', 'test', 'audit', '--json']);
    expect(sent.exitCode, sent.stderr).toBe(0);
    const result = JSON.parse(sent.stdout) as { eventId: string; status: number; acknowledged: boolean };
    expect(result).toMatchObject({ status: 204, acknowledged: true });
    const request = lastAcknowledged(audit);
    expect(request.headers['webhook-id']).toBe(result.eventId);
    expect(new Webhook(auditSecret).verify(request.body, request.headers as Record<string, string>)).toBeTruthy();
    expect(HTTP.toEvent({ headers: request.headers, body: request.body })).toMatchObject({
      type: 'io.service.webhook.test',
      source: 'service/audit',
    });

    auditStatus = 500;
    const refused = await cli(['webhooks', 'test', 'audit']);
    auditStatus = 204;
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toContain('WEBHOOK_TEST_FAILED');
  });

  it('bad input gets a stable code: an unknown endpoint, replay without a selection, a bad sequence', async () => {
    const unknown = await cli(['webhooks', 'deliveries', 'nosuch']);
    expect(unknown.exitCode).not.toBe(0);
    expect(unknown.stderr).toContain('WEBHOOK_ENDPOINT_UNKNOWN');
    const neither = await cli(['webhooks', 'replay', 'audit']);
    expect(neither.exitCode).not.toBe(0);
    expect(neither.stderr).toContain('WEBHOOK_REQUEST_INVALID');
    const badSequence = await cli(['webhooks', 'replay', 'audit', '--from', '0']);
    expect(badSequence.stderr).toContain('WEBHOOK_REQUEST_INVALID');
  });
});

describe('signed checkpoints as events', () => {
  it('reach only the endpoint whose types subscribe, signed, in one gap-free sequence with its receipt events', async () => {
    // receipts.checkpoint.everyReceipts: 2, so the calls so far were checkpointed; two more make sure of one.
    await call('modern', 'get_order', { orderId: 'ord_1001' });
    await call('legacy', 'search_orders', {});
    await waitFor(() => anchor.requests.some((request) => readEvent(request).type === CHECKPOINT), 'a checkpoint event');
    const events = anchor.requests.map((request) => {
      expect(new Webhook(anchorSecret).verify(request.body, request.headers as Record<string, string>)).toBeTruthy();
      return HTTP.toEvent({ headers: request.headers, body: request.body }) as unknown as {
        id: string;
        type: string;
        sequence: string;
        data: Record<string, unknown>;
      };
    });
    expect(events.map((event) => Number(event.sequence))).toEqual(events.map((_, index) => index + 1));
    const receiptsSeen = new Set<string>();
    let checkpoints = 0;
    for (const event of events) {
      if (event.type === RECEIPTED) {
        receiptsSeen.add(String(event.data.receipt));
        continue;
      }
      expect(event.type).toBe(CHECKPOINT);
      checkpoints += 1;
      expect(Object.keys(event.data).sort()).toEqual(['note', 'origin', 'rootHash', 'treeSize']);
      const { origin, treeSize, rootHash, note } = event.data as { origin: string; treeSize: number; rootHash: string; note: string };
      expect(event.id).toBe(`evt_checkpoint-${treeSize}_anchor`);
      // The C2SP note: origin, size, base64 root hash, blank line, a signature line by the gateway's key.
      expect(note.split('\n').slice(0, 4)).toEqual([origin, String(treeSize), rootHash, '']);
      expect(note).toMatch(new RegExp(`\n— ${origin.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\S+\n$`));
      // In order: every receipt the checkpoint covers came first in the stream.
      for (let index = 0; index < treeSize; index += 1) expect(receiptsSeen.has(`receipt-${index}`)).toBe(true);
    }
    expect(checkpoints).toBeGreaterThan(0);
    // The endpoints without `types:` get receipted calls only.
    for (const receiver of [audit, denials, detailed])
      expect(receiver.requests.every((request) => readEvent(request).type !== CHECKPOINT)).toBe(true);
  });
});

describe('a receiver down past the retry budget', () => {
  const adminGet = async <T>(path: string): Promise<T> =>
    (await (
      await fetch(`${new URL(gateway.mcpUrl).origin}/admin/${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    ).json()) as T;
  type Summary = {
    name: string;
    state: string;
    paused: { sequence: number } | null;
    nextSequence: number;
    counts: { pending: number; delivered: number };
  };
  const flakyState = async () =>
    (await adminGet<{ endpoints: Summary[] }>('webhooks')).endpoints.find((endpoint) => endpoint.name === 'flaky')!;

  it(
    'pauses the endpoint (status, doctor and the admin API say so); after `gateway webhooks resume` every sequence ' +
      'arrives once, in order, with no gap',
    async () => {
      await waitFor(() => flaky.requests.length > 0, 'the events so far');
      const port = Number(new URL(flaky.url).port);
      const requests = flaky.requests;
      await flaky.close(); // down: connections refused
      for (let index = 0; index < 3; index += 1) await call('modern', 'get_order', { orderId: 'ord_1001' });
      // Three attempts of the first event in the outage (retry.attempts: 3), then the pause.
      const deadline = Date.now() + 20_000;
      while ((await flakyState()).state !== 'paused') {
        if (Date.now() > deadline) throw new Error('timed out waiting for the pause');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const paused = await flakyState();
      const status = await cli(['status', '--json']);
      expect(status.exitCode, status.stderr).toBe(0);
      expect(
        (JSON.parse(status.stdout) as { webhooks: Array<Record<string, unknown>> }).webhooks.find((endpoint) => endpoint.name === 'flaky'),
      ).toMatchObject({ state: 'paused', paused: { sequence: paused.paused!.sequence } });
      expect((await cli(['status'])).stdout).toContain(`flaky: PAUSED at sequence ${paused.paused!.sequence}`);
      expect((await cli(['webhooks', 'list'])).stdout).toMatch(/flaky .*PAUSED at/);
      const doctor = JSON.parse((await cli(['doctor', '--json'])).stdout) as {
        findings: Array<{ check: string; level: string; message: string; fix?: string }>;
      };
      expect(doctor.findings.filter((finding) => finding.check === 'webhooks' && finding.level === 'warning')).toEqual([
        expect.objectContaining({
          message: expect.stringContaining('flaky is PAUSED'),
          fix: expect.stringContaining('gateway webhooks resume flaky'),
        }),
      ]);

      // Up again, but paused: later events wait, nothing arrives until the resume.
      await call('legacy', 'search_orders', {});
      const beforeOutage = requests.length;
      flaky = await startWebhookReceiver(undefined, { port, requests });
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(requests.length).toBe(beforeOutage);
      expect((await flakyState()).state).toBe('paused');

      const resumed = await cli(['webhooks', 'resume', 'flaky']);
      expect(resumed.exitCode, resumed.stderr).toBe(0);
      expect(resumed.stdout).toContain(`flaky resumed: delivery goes on from sequence ${paused.paused!.sequence}`);
      let total = 0;
      const resumeDeadline = Date.now() + 20_000;
      for (;;) {
        const state = await flakyState();
        total = state.nextSequence - 1;
        if (state.counts.pending === 0 && state.counts.delivered === total) break;
        if (Date.now() > resumeDeadline) throw new Error('timed out waiting for the waiting events');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await waitFor(() => requests.filter((request) => request.status < 300).length >= total, 'the last acknowledgement recorded');
      // Every sequence once, in order, no gap: the outage cost time, not events.
      const acknowledged = requests.filter((request) => request.status < 300).map((request) => Number(readEvent(request).sequence));
      expect(acknowledged).toEqual(Array.from({ length: total }, (_, index) => index + 1));
      expect(total).toBeGreaterThanOrEqual(paused.paused!.sequence + 3);
      expect(requests.every((request) => request.status < 300)).toBe(true);
      expect((await flakyState()).state).toBe('active');
    },
  );
});

describe('webhook configuration', () => {
  const base = 'gateway:\n  url: http://127.0.0.1:8080\nsources: {}\n';

  it('an endpoint must be https, plain http only for a loopback host', () => {
    expect(() => parseConfig(`${base}webhooks:\n  audit: { url: 'http://siem.example.com/hook', secret: s }\n`, 'gateway.yaml')).toThrow(
      /webhooks\.audit\.url/,
    );
    expect(
      parseConfig(`${base}webhooks:\n  audit: { url: 'https://siem.example.com/hook', secret: s }\n`, 'gateway.yaml').config.webhooks?.audit
        ?.url,
    ).toBe('https://siem.example.com/hook');
    expect(
      parseConfig(`${base}webhooks:\n  audit: { url: 'http://127.0.0.1:9000/hook', secret: s }\n`, 'gateway.yaml').config.webhooks,
    ).toBeDefined();
    expect(() =>
      parseConfig(`${base}webhooks:\n  audit: { url: 'https://x.example', secret: s, outcomes: [maybe] }\n`, 'gateway.yaml'),
    ).toThrow(/outcomes/);
  });

  it('types, data and onExhausted take only their documented values', () => {
    const endpoint = (extra: string) => `${base}webhooks:\n  audit: { url: 'https://x.example', secret: s, ${extra} }\n`;
    expect(
      parseConfig(endpoint(`types: [${RECEIPTED}, ${CHECKPOINT}], data: detailed, onExhausted: skip`), 'gateway.yaml').config.webhooks
        ?.audit,
    ).toMatchObject({
      types: [RECEIPTED, CHECKPOINT],
      data: 'detailed',
      onExhausted: 'skip',
    });
    expect(() => parseConfig(endpoint('types: [io.service.call.received]'), 'gateway.yaml')).toThrow(/types/);
    expect(() => parseConfig(endpoint('types: []'), 'gateway.yaml')).toThrow(/types/);
    expect(() => parseConfig(endpoint('data: full'), 'gateway.yaml')).toThrow(/data/);
    expect(() => parseConfig(endpoint('onExhausted: drop'), 'gateway.yaml')).toThrow(/onExhausted/);
  });

  it('a missing or malformed signing secret stops start-up, naming the endpoint and never the value', async () => {
    const env = { ...workspace.env };
    delete (env as Record<string, string | undefined>).GATEWAY_SECRET_AUDIT_WEBHOOK_SECRET;
    await expect(
      startGateway({
        configPath: workspace.configPath,
        lockPath: workspace.lockPath,
        env,
        logger: pino({ level: 'silent' }),
        listen: '127.0.0.1:0',
      }),
    ).rejects.toMatchObject({ code: 'WEBHOOK_SECRET_MISSING', message: expect.stringContaining('webhooks.audit.secret') });
    const malformed = 'not-base64-!!';
    await expect(
      startGateway({
        configPath: workspace.configPath,
        lockPath: workspace.lockPath,
        env: { ...workspace.env, GATEWAY_SECRET_AUDIT_WEBHOOK_SECRET: malformed },
        logger: pino({ level: 'silent' }),
        listen: '127.0.0.1:0',
      }),
    ).rejects.toSatisfy(
      (error: Error & { code?: string }) => error.code === 'WEBHOOK_SECRET_INVALID' && !error.message.includes(malformed),
    );
  });
});
