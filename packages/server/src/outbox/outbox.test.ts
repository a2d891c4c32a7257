import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HTTP } from 'cloudevents';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { formatCheckpoint, parseConfig, signNote, type Receipt, type ReceiptOutcome } from '@gateway/core';
import { createGuardedAgent } from '@gateway/runtime';
import { receiptMigrations, sqliteReceiptStorage } from '../receipts/sqlite/index.js';
import type { ReceiptHook, StoredCheckpoint } from '../receipts/store.js';
import { createReceiptWriter } from '../receipts/writer.js';
import { openDatabase, type SqliteDatabase } from '../store/sqlite/database.js';
import type { Transaction } from '../store/unit-of-work.js';
import { sqliteUnitOfWork } from '../../test/support/sqlite-unit-of-work.js';
import { newWebhookSecret, startWebhookReceiver, waitFor, type WebhookReceiver } from '../../test/support/webhook-receiver.js';
import {
  createDispatcher,
  createOutbox,
  parseRetryAfter,
  retryDelayMs,
  retrySettings,
  type DispatcherEndpoint,
  type OutboxEndpoint,
  type OutboxEvent,
  type WebhookDispatcher,
} from './index.js';
import { outboxMigrations, SqliteOutboxStore } from './sqlite/index.js';

export function makeReceipt(index: number, outcome: ReceiptOutcome = 'allowed', session = 'session-7'): Receipt {
  return {
    id: `receipt-${index}`,
    index,
    time: new Date(Date.UTC(2026, 10, 22, 12, 0, 0, index % 1000)).toISOString(),
    session,
    person: 'local:ada',
    clientId: 'client-1',
    tool: 'get_pet',
    source: 'pets',
    publication: 'publication-1',
    fingerprint: 'sha256:abc',
    login: null,
    outcome,
    reason: outcome === 'allowed' ? null : outcome === 'denied' ? 'TOOL_NOT_IN_SESSION' : 'UPSTREAM_FAILED',
    upstreamStatus: outcome === 'allowed' ? 200 : null,
    durationMs: 1.5,
    argumentsDigest: 'hmac-sha256:00',
    resultDigest: null,
  };
}

const loopbackAgent = createGuardedAgent({ allowPrivateNetworks: ['127.0.0.1/32'] });
const fast = { initialDelayMs: 5, maxDelayMs: 50, timeoutMs: 2_000 };

describe('webhook outbox and delivery', () => {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  function database(migrations = outboxMigrations): SqliteDatabase {
    const directory = mkdtempSync(join(tmpdir(), 'gateway-outbox-'));
    const handle = openDatabase(join(directory, 'gateway.db'), migrations);
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
    cleanups.push(() => handle.close());
    return handle;
  }

  async function receiver(respond?: WebhookReceiver['respond']): Promise<WebhookReceiver> {
    const started = await startWebhookReceiver(respond);
    cleanups.push(() => started.close());
    return started;
  }

  function dispatch(
    db: SqliteDatabase,
    endpoints: DispatcherEndpoint[],
    outbox = createOutbox({ store: new SqliteOutboxStore(db), endpoints }),
  ) {
    const dispatcher: WebhookDispatcher = createDispatcher({ store: outbox.store, endpoints, agent: loopbackAgent, pollIntervalMs: 50 });
    outbox.subscribe(() => dispatcher.notify());
    dispatcher.start();
    cleanups.push(() => dispatcher.stop());
    return { outbox, dispatcher };
  }

  /**
   * Receipts to a receiver as the gateway wires them: a SQLite receipt store whose appends run the outbox hook
   * (and its after-commit hand-over), and, once started, a dispatcher over the real outbox store whose reads of
   * pending events go through `readPending` (the tests count or slow them). Idle workers poll once a minute.
   */
  async function receiptsToReceiver(
    readPending: (store: SqliteOutboxStore, endpoint: string, limit: number) => OutboxEvent[] | Promise<OutboxEvent[]>,
  ) {
    const db = database([...receiptMigrations, ...outboxMigrations]);
    const target = await receiver();
    const secret = newWebhookSecret();
    const endpoints = [{ name: 'audit', url: target.url, secrets: () => [secret], retry: fast }];
    const outbox = createOutbox({ store: new SqliteOutboxStore(db), endpoints });
    const sqlite = new SqliteOutboxStore(db);
    const store = Object.assign(Object.create(sqlite) as SqliteOutboxStore, {
      pending: (endpoint: string, limit: number) => readPending(sqlite, endpoint, limit),
    });
    const receipts = createReceiptWriter(sqliteReceiptStorage(db), [outbox]);
    /** Resolves once the receipt and its event have committed. */
    const append = async (index: number): Promise<void> => {
      const { id, index: _leaf, ...draft } = makeReceipt(index);
      await receipts.append([draft]);
    };
    const start = (): void => {
      const dispatcher = createDispatcher({ store, endpoints, agent: loopbackAgent, pollIntervalMs: 60_000 });
      outbox.subscribe((committed) => dispatcher.notify({ committed }));
      dispatcher.start();
      cleanups.push(() => dispatcher.stop());
    };
    return { target, sqlite, append, start };
  }

  /**
   * Appends receipts the way the receipt log does: the hook inside a transaction on the same handle (the outbox's
   * SQLite store writes on the handle it was built with, which is the one of the transaction it is given).
   */
  const handleTransaction: Transaction = { adapter: 'sqlite' };
  function receiptTransaction(db: SqliteDatabase, outbox: Pick<ReceiptHook, 'onReceipt'>, receipts: Receipt[]): void {
    db.transaction(() => {
      for (const receipt of receipts) outbox.onReceipt(receipt, handleTransaction);
    })();
  }

  const delivered = (target: WebhookReceiver) => target.requests.filter((request) => request.status >= 200 && request.status < 300);
  const sequenceOf = (body: string) => Number((JSON.parse(body) as { sequence: string }).sequence);

  it('a call a person must act on first becomes an event by default, and `outcomes` can select it alone', async () => {
    const db = database();
    const { config } = parseConfig(
      'gateway:\n  url: http://127.0.0.1:8080\nsources: {}\n' +
        'webhooks:\n  waiting: { url: "https://hooks.example.com/a", secret: s, outcomes: [action-required] }\n',
      'gateway.yaml',
    );
    const waiting = config.webhooks!.waiting!;
    const outbox = createOutbox({
      store: new SqliteOutboxStore(db),
      endpoints: [{ name: 'audit' }, { name: 'waiting', outcomes: waiting.outcomes! }],
    });
    receiptTransaction(db, outbox, [makeReceipt(0, 'allowed'), makeReceipt(1, 'action-required'), makeReceipt(2, 'denied')]);
    const store = new SqliteOutboxStore(db);
    expect((await store.events('audit', { limit: 10 })).map((event) => event.receiptId)).toEqual(['receipt-0', 'receipt-1', 'receipt-2']);
    expect((await store.events('waiting', { limit: 10 })).map((event) => event.receiptId)).toEqual(['receipt-1']);
  });

  it('approval and console receipts become events of their own types: by default, by `types`, never filtered by `outcomes`', async () => {
    const db = database();
    const outbox = createOutbox({
      store: new SqliteOutboxStore(db),
      endpoints: [
        { name: 'audit' },
        { name: 'calls', types: ['io.service.call.receipted'] },
        { name: 'people', types: ['io.service.approval.receipted', 'io.service.console.receipted'] },
        { name: 'denials', outcomes: ['denied'] },
      ],
    });
    const approval: Receipt = {
      ...makeReceipt(1, 'allowed'),
      action: { kind: 'approval', approval: 'approval-abc', decision: 'approved', approver: 'ada' },
    };
    const revoke: Receipt = {
      ...makeReceipt(2, 'allowed', 'session-9'),
      tool: '',
      action: { kind: 'console', action: 'session.revoke', operator: 'olga', target: 'session-9' },
    };
    receiptTransaction(db, outbox, [makeReceipt(0, 'allowed'), approval, revoke]);
    const store = new SqliteOutboxStore(db);
    const typesOf = async (endpoint: string) =>
      (await store.events(endpoint, { limit: 10 })).map((event) => {
        const parsed = HTTP.toEvent({ headers: { 'content-type': 'application/cloudevents+json' }, body: event.body }) as unknown as {
          type: string;
          subject?: string;
          data: unknown;
        };
        return [event.receiptId, parsed.type, parsed.subject, parsed.data];
      });
    const approvalEvent = [
      'receipt-1',
      'io.service.approval.receipted',
      'session-7',
      { approval: 'approval-abc', decision: 'approved', approver: 'ada', tool: 'get_pet', receipt: 'receipt-1' },
    ];
    const consoleEvent = [
      'receipt-2',
      'io.service.console.receipted',
      'session-9',
      { operator: 'olga', action: 'session.revoke', target: 'session-9', receipt: 'receipt-2' },
    ];
    expect(await typesOf('audit')).toEqual([
      ['receipt-0', 'io.service.call.receipted', 'session-7', { tool: 'get_pet', outcome: 'allowed', receipt: 'receipt-0' }],
      approvalEvent,
      consoleEvent,
    ]);
    expect((await typesOf('calls')).map(([receipt]) => receipt)).toEqual(['receipt-0']);
    expect(await typesOf('people')).toEqual([approvalEvent, consoleEvent]);
    // `outcomes` selects receipted calls; action receipts are chosen by `types` alone.
    expect((await typesOf('denials')).map(([receipt]) => receipt)).toEqual(['receipt-1', 'receipt-2']);
  });

  it('each receipt becomes one event per subscribed endpoint, filtered by outcome, sequenced per endpoint in its transaction', async () => {
    const db = database();
    const outbox = createOutbox({
      store: new SqliteOutboxStore(db),
      endpoints: [{ name: 'audit' }, { name: 'denials', outcomes: ['denied'] }],
    });
    const receipts = [makeReceipt(0, 'allowed'), makeReceipt(1, 'denied'), makeReceipt(2, 'error'), makeReceipt(3, 'denied')];
    receiptTransaction(db, outbox, receipts);
    // A transaction that rolls back takes its events and their sequence numbers with it.
    expect(() =>
      db.transaction(() => {
        outbox.onReceipt(makeReceipt(4, 'denied'), handleTransaction);
        throw new Error('receipt write failed');
      })(),
    ).toThrow('receipt write failed');
    receiptTransaction(db, outbox, [makeReceipt(5, 'denied')]);

    const store = new SqliteOutboxStore(db);
    const audit = await store.events('audit', { limit: 100 });
    const denials = await store.events('denials', { limit: 100 });
    expect(audit.map((event) => [event.sequence, event.receiptId])).toEqual([
      [1, 'receipt-0'],
      [2, 'receipt-1'],
      [3, 'receipt-2'],
      [4, 'receipt-3'],
      [5, 'receipt-5'],
    ]);
    expect(denials.map((event) => [event.sequence, event.eventId])).toEqual([
      [1, 'evt_receipt-1_denials'],
      [2, 'evt_receipt-3_denials'],
      [3, 'evt_receipt-5_denials'],
    ]);
    expect(audit.every((event) => event.status === 'pending')).toBe(true);
  });

  it('sequences continue from the highest stored event when two processes append to one file in turn', async () => {
    const first = database();
    const path = first.name;
    const second = openDatabase(path, outboxMigrations);
    cleanups.push(() => second.close());
    const endpoints = [{ name: 'audit' }];
    const outboxes = [
      createOutbox({ store: new SqliteOutboxStore(first), endpoints }),
      createOutbox({ store: new SqliteOutboxStore(second), endpoints }),
    ];
    for (let index = 0; index < 9; index += 1) {
      const which = index % 3 === 0 ? 1 : 0;
      receiptTransaction(which === 0 ? first : second, outboxes[which]!, [makeReceipt(index)]);
    }
    const store = new SqliteOutboxStore(second);
    expect((await store.events('audit', { limit: 100 })).map((event) => [event.sequence, event.receiptId])).toEqual(
      Array.from({ length: 9 }, (_, index) => [index + 1, `receipt-${index}`]),
    );
    // `gateway webhooks list` shows the sequence the next event will get.
    expect((await store.endpoint('audit'))?.nextSequence).toBe(10);
  });

  it('an event arrives with exactly the CloudEvents envelope and a Standard Webhooks signature that verifies', async () => {
    const db = database();
    const secret = newWebhookSecret();
    const target = await receiver();
    const { outbox } = dispatch(db, [{ name: 'audit', url: target.url, secrets: () => [secret], retry: fast }]);
    const receipt = makeReceipt(42, 'denied', 'session-12');
    receiptTransaction(db, outbox, [receipt]);
    await waitFor(() => delivered(target).length === 1, 'the event');

    const [request] = target.requests;
    const headers = request!.headers as Record<string, string>;
    expect(headers['content-type']).toMatch(/^application\/cloudevents\+json(;|$)/);
    expect(new Webhook(secret).verify(request!.body, headers)).toBeTruthy();
    expect(() => new Webhook(newWebhookSecret()).verify(request!.body, headers)).toThrow();
    expect(headers['webhook-id']).toBe('evt_receipt-42_audit');
    expect(Math.abs(Number(headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);

    const event = HTTP.toEvent({ headers, body: request!.body });
    expect(Array.isArray(event)).toBe(false);
    expect(JSON.parse(JSON.stringify(event))).toEqual({
      specversion: '1.0',
      id: 'evt_receipt-42_audit',
      type: 'io.service.call.receipted',
      source: 'service/audit',
      subject: 'session-12',
      time: receipt.time,
      datacontenttype: 'application/json',
      data: { tool: 'get_pet', outcome: 'denied', receipt: 'receipt-42' },
      sequence: '00000000000000000001',
    });
    // The specification's data: exactly these three keys, `receipt` the identifier.
    expect(Object.keys((event as { data: object }).data).sort()).toEqual(['outcome', 'receipt', 'tool']);
    expect(headers['webhook-id']).toBe((event as { id: string }).id);
  });

  it(
    'a receiver failing the first attempts (500, then 429 and 503 with Retry-After) gets every event, in order, ' + 'each id stable',
    async () => {
      const db = database();
      const secret = newWebhookSecret();
      const attemptsById = new Map<string, number>();
      const target = await receiver(({ headers }) => {
        const id = String(headers['webhook-id']);
        const attempt = (attemptsById.get(id) ?? 0) + 1;
        attemptsById.set(id, attempt);
        if (attempt === 1) return { status: 500 };
        // The first event is told to come back in one second; the later ones right away.
        if (attempt === 2) return { status: 429, headers: { 'retry-after': id === 'evt_receipt-0_audit' ? '1' : '0' } };
        if (attempt === 3) return { status: 503, headers: { 'retry-after': new Date(Date.now() - 1000).toUTCString() } };
        return { status: 200 };
      });
      const { outbox } = dispatch(db, [{ name: 'audit', url: target.url, secrets: () => [secret], retry: { ...fast, maxDelayMs: 5_000 } }]);
      receiptTransaction(
        db,
        outbox,
        Array.from({ length: 20 }, (_, index) => makeReceipt(index)),
      );
      await waitFor(() => delivered(target).length === 20, 'twenty acknowledged events');

      expect(delivered(target).map((request) => sequenceOf(request.body))).toEqual(Array.from({ length: 20 }, (_, index) => index + 1));
      // Strictly in order: no request for event k+1 before event k was acknowledged.
      let highestAcknowledged = 0;
      for (const request of target.requests) {
        const sequence = sequenceOf(request.body);
        expect(sequence).toBe(highestAcknowledged + 1);
        if (request.status === 200) highestAcknowledged = sequence;
      }
      // Every attempt of an event carries the same id and the same body.
      const bodiesById = new Map<string, Set<string>>();
      for (const request of target.requests) {
        const id = String(request.headers['webhook-id']);
        bodiesById.set(id, (bodiesById.get(id) ?? new Set()).add(request.body));
        expect((JSON.parse(request.body) as { id: string }).id).toBe(id);
      }
      expect([...bodiesById.values()].every((bodies) => bodies.size === 1)).toBe(true);
      expect(target.requests).toHaveLength(80);
      // Retry-After: 1 was honoured (the third attempt of the first event waited at least ~1 s).
      const first = target.requests.filter((request) => request.headers['webhook-id'] === 'evt_receipt-0_audit');
      expect(first[2]!.at - first[1]!.at).toBeGreaterThanOrEqual(950);
    },
  );

  it(
    'onExhausted: skip, a receiver down for longer than the bound: events are marked failed, delivery moves on, ' +
      'and replay delivers them in order',
    async () => {
      const db = database();
      let isUp = false;
      const target = await receiver(() => ({ status: isUp ? 200 : 503 }));
      const endpoints = [
        {
          name: 'audit',
          url: target.url,
          secrets: () => [newWebhookSecret()],
          retry: { ...fast, attempts: 3 },
          onExhausted: 'skip' as const,
        },
      ];
      const { outbox, dispatcher } = dispatch(db, endpoints);
      receiptTransaction(
        db,
        outbox,
        Array.from({ length: 5 }, (_, index) => makeReceipt(index)),
      );
      const store = outbox.store as SqliteOutboxStore;
      await waitFor(async () => (await store.endpoint('audit'))!.counts.failed === 5, 'five failed events');
      expect(target.requests).toHaveLength(15); // three attempts each, then given up
      expect((await store.events('audit', { limit: 10 })).map((event) => [event.status, event.attempts, event.lastStatus])).toEqual(
        Array.from({ length: 5 }, () => ['failed', 3, 503]),
      );

      isUp = true;
      receiptTransaction(db, outbox, [makeReceipt(5)]);
      await waitFor(() => delivered(target).length === 1, 'the next event after the failed ones');
      expect(sequenceOf(delivered(target)[0]!.body)).toBe(6);

      expect(await store.replay('audit', { failed: true })).toBe(5);
      dispatcher.notify();
      await waitFor(() => delivered(target).length === 6, 'the replayed events');
      expect(delivered(target).map((request) => sequenceOf(request.body))).toEqual([6, 1, 2, 3, 4, 5]);
      // The receiver has answered the last one; the dispatcher marks it once it has read that answer.
      await waitFor(async () => (await store.endpoint('audit'))!.counts.delivered === 6, 'the last acknowledgement marked');
      expect((await store.endpoint('audit'))!.counts).toEqual({ pending: 0, delivered: 6, failed: 0 });

      // --from replays delivered events too, in order, under their original ids.
      expect(await store.replay('audit', { fromSequence: 4 })).toBe(3);
      dispatcher.notify();
      await waitFor(() => delivered(target).length === 9, 'the events from sequence 4');
      expect(
        delivered(target)
          .slice(6)
          .map((request) => request.headers['webhook-id']),
      ).toEqual(['evt_receipt-3_audit', 'evt_receipt-4_audit', 'evt_receipt-5_audit']);
    },
  );

  it('events committed through the receipt log go out in order without being read back from the store one by one', async () => {
    // The real SQLite store, counting how often the dispatcher reads pending events back.
    let reads = 0;
    const { target, sqlite, append, start } = await receiptsToReceiver((store, endpoint, limit) => {
      reads += 1;
      return store.pending(endpoint, limit);
    });
    start();
    const total = 40;
    for (let index = 0; index < total; index += 1) {
      void append(index);
      // One call at a time, as a client at concurrency 1: each event is out before the next receipt.
      await waitFor(() => delivered(target).length === index + 1, `event ${index + 1}`);
    }
    expect(delivered(target).map((request) => sequenceOf(request.body))).toEqual(Array.from({ length: total }, (_, index) => index + 1));
    // The first event is read (nothing known yet); the others join the queue as they commit.
    expect(reads).toBeLessThanOrEqual(2);
    await waitFor(async () => (await sqlite.endpoint('audit'))!.counts.delivered === total, 'every acknowledgement marked');
  });

  it('with a store whose reads take time, an event committed during a read is still delivered at once', async () => {
    // As a PostgreSQL store would be: the rows are read, then the answer takes a while to arrive. The second
    // receipt commits (and is announced) after the first read's query ran, before its answer arrived.
    let reads = 0;
    const { target, append, start } = await receiptsToReceiver(async (store, endpoint, limit) => {
      const rows = store.pending(endpoint, limit);
      reads += 1;
      if (reads === 1) setTimeout(() => void append(1), 10);
      await new Promise((resolve) => setTimeout(resolve, 60));
      return rows;
    });
    await append(0);
    // Idle workers poll only once a minute here: only a correct hand-over delivers the second event quickly.
    start();
    await waitFor(() => delivered(target).length === 2, 'both events', 5_000);
    expect(delivered(target).map((request) => sequenceOf(request.body))).toEqual([1, 2]);
  });

  it('410 Gone disables the endpoint; its events stay pending until a replay re-enables it', async () => {
    const db = database();
    let isGone = true;
    const target = await receiver(() => ({ status: isGone ? 410 : 200 }));
    const { outbox, dispatcher } = dispatch(db, [{ name: 'audit', url: target.url, secrets: () => [newWebhookSecret()], retry: fast }]);
    receiptTransaction(db, outbox, [makeReceipt(0), makeReceipt(1)]);
    const store = outbox.store as SqliteOutboxStore;
    await waitFor(async () => (await store.endpoint('audit'))!.disabledAt !== null, 'the endpoint disabled');
    receiptTransaction(db, outbox, [makeReceipt(2)]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(target.requests).toHaveLength(1);
    expect((await store.endpoint('audit'))!.disabledReason).toContain('410 Gone');
    expect((await store.endpoint('audit'))!.counts).toEqual({ pending: 3, delivered: 0, failed: 0 });

    isGone = false;
    await store.replay('audit', { failed: true });
    dispatcher.notify();
    await waitFor(() => delivered(target).length === 3, 'the held events after re-enabling');
    expect(delivered(target).map((request) => sequenceOf(request.body))).toEqual([1, 2, 3]);
  });

  it('during a secret rotation both signatures are sent and each secret verifies on its own', async () => {
    const db = database();
    const current = newWebhookSecret();
    const previous = newWebhookSecret();
    const target = await receiver();
    const { outbox } = dispatch(db, [{ name: 'audit', url: target.url, secrets: () => [current, previous], retry: fast }]);
    receiptTransaction(db, outbox, [makeReceipt(0)]);
    await waitFor(() => delivered(target).length === 1, 'the event');
    const headers = target.requests[0]!.headers as Record<string, string>;
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(headers['webhook-signature']!.split(' ').every((signature) => signature.startsWith('v1,'))).toBe(true);
    expect(new Webhook(current).verify(target.requests[0]!.body, headers)).toBeTruthy();
    expect(new Webhook(previous).verify(target.requests[0]!.body, headers)).toBeTruthy();
  });

  it('the lease keeps a second dispatcher on the same database out until the first lets go', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'gateway-outbox-'));
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
    const path = join(directory, 'gateway.db');
    const first = openDatabase(path, outboxMigrations);
    const second = openDatabase(path, outboxMigrations);
    cleanups.push(
      () => first.close(),
      () => second.close(),
    );
    const target = await receiver(() => ({ status: 200, delayMs: 2 }));
    const endpoints = [{ name: 'audit', url: target.url, secrets: () => [newWebhookSecret()], retry: fast }];
    const outboxA = createOutbox({ store: new SqliteOutboxStore(first), endpoints });
    const outboxB = createOutbox({ store: new SqliteOutboxStore(second), endpoints });
    const a = createDispatcher({
      store: outboxA.store,
      endpoints,
      agent: loopbackAgent,
      holder: 'process-a',
      pollIntervalMs: 20,
      leaseMs: 10_000,
    });
    const b = createDispatcher({
      store: outboxB.store,
      endpoints,
      agent: loopbackAgent,
      holder: 'process-b',
      pollIntervalMs: 20,
      leaseMs: 10_000,
    });
    a.start();
    await waitFor(
      async () => (await (outboxA.store as SqliteOutboxStore).endpoint('audit'))!.leaseHolder === 'process-a',
      'the first lease',
    );
    b.start();
    cleanups.push(() => b.stop());
    // Both processes append; only the lease holder delivers, so the receiver sees one ordered stream.
    for (let index = 0; index < 40; index += 2) {
      receiptTransaction(first, outboxA, [makeReceipt(index)]);
      receiptTransaction(second, outboxB, [makeReceipt(index + 1)]);
    }
    await waitFor(() => delivered(target).length >= 10, 'some deliveries by the first process');
    await a.stop(); // releases the lease: the second process takes over where the first stopped
    await waitFor(async () => (await (outboxB.store as SqliteOutboxStore).endpoint('audit'))!.counts.delivered === 40, 'all forty events');
    const sequences = delivered(target).map((request) => sequenceOf(request.body));
    // At most the event in flight when `a` stopped is sent again (same id); otherwise one ordered stream.
    expect([...new Set(sequences)]).toEqual(Array.from({ length: 40 }, (_, index) => index + 1));
    expect(sequences.every((sequence, index) => index === 0 || sequence >= sequences[index - 1]!)).toBe(true);
    expect((await (outboxB.store as SqliteOutboxStore).endpoint('audit'))!.leaseHolder).toBe('process-b');
  });

  it('an acknowledgement with a body larger than 64 KiB still counts; the rest of the body is not read', async () => {
    const db = database();
    const target = await receiver(() => ({ status: 200, body: 'x'.repeat(300_000) }));
    const { outbox } = dispatch(db, [{ name: 'audit', url: target.url, secrets: () => [newWebhookSecret()], retry: fast }]);
    receiptTransaction(db, outbox, [makeReceipt(0), makeReceipt(1), makeReceipt(2)]);
    const store = outbox.store as SqliteOutboxStore;
    await waitFor(async () => (await store.endpoint('audit'))!.counts.delivered === 3, 'three events acknowledged with large bodies');
    expect((await store.events('audit', { limit: 3 })).map((event) => [event.attempts, event.lastStatus])).toEqual([
      [1, 200],
      [1, 200],
      [1, 200],
    ]);
    expect(target.requests.map((request) => sequenceOf(request.body))).toEqual([1, 2, 3]);
  });

  it('an attempt that outlives retry.timeoutMs is cut and retried under the same id', async () => {
    const db = database();
    let arrivals = 0;
    const target = await receiver(() => ({ status: 200, delayMs: arrivals++ === 0 ? 1_000 : 0 }));
    const { outbox } = dispatch(db, [
      { name: 'audit', url: target.url, secrets: () => [newWebhookSecret()], retry: { ...fast, timeoutMs: 150 } },
    ]);
    receiptTransaction(db, outbox, [makeReceipt(0)]);
    const store = outbox.store as SqliteOutboxStore;
    await waitFor(async () => (await store.endpoint('audit'))!.counts.delivered === 1, 'the event after a timed-out attempt');
    const [event] = await store.events('audit', { limit: 1 });
    expect(event!.attempts).toBe(2);
    expect(event!.lastStatus).toBe(200);
    await waitFor(() => target.requests.length === 2, 'the slow answer to be recorded');
    expect(target.requests.map((request) => request.headers['webhook-id'])).toEqual(['evt_receipt-0_audit', 'evt_receipt-0_audit']);
  });

  it(
    'reading ahead, every acknowledged event is marked before the next is sent: a restarted dispatcher repeats at most ' +
      'the event in flight',
    async () => {
      const db = database();
      const target = await receiver(() => ({ status: 200, delayMs: 1 }));
      const endpoints = [{ name: 'audit', url: target.url, secrets: () => [newWebhookSecret()], retry: fast }];
      const outbox = createOutbox({ store: new SqliteOutboxStore(db), endpoints });
      receiptTransaction(
        db,
        outbox,
        Array.from({ length: 300 }, (_, index) => makeReceipt(index)),
      );
      const store = outbox.store as SqliteOutboxStore;
      const first = createDispatcher({ store, endpoints, agent: loopbackAgent, pollIntervalMs: 20 });
      first.start();
      await waitFor(() => delivered(target).length >= 120, 'a first part of the events');
      await first.stop();
      const receivedBeforeRestart = new Set(delivered(target).map((request) => request.headers['webhook-id']));
      // Every event the receiver acknowledged before the stop is marked, except at most the one cut in flight.
      expect((await store.endpoint('audit'))!.counts.delivered).toBeGreaterThanOrEqual(receivedBeforeRestart.size - 1);
      expect((await store.endpoint('audit'))!.counts.delivered).toBeLessThanOrEqual(receivedBeforeRestart.size);

      const second = createDispatcher({ store, endpoints, agent: loopbackAgent, pollIntervalMs: 20 });
      second.start();
      cleanups.push(() => second.stop());
      await waitFor(async () => (await store.endpoint('audit'))!.counts.delivered === 300, 'all 300 events');
      const sequences = delivered(target).map((request) => sequenceOf(request.body));
      expect([...new Set(sequences)]).toEqual(Array.from({ length: 300 }, (_, index) => index + 1));
      expect(sequences.length - 300).toBeLessThanOrEqual(1);
      expect(sequences.every((sequence, index) => index === 0 || sequence >= sequences[index - 1]!)).toBe(true);
    },
  );

  it('a dispatcher without the lease marks nothing delivered: its acknowledged events are sent again by the holder', async () => {
    const db = database();
    const outbox = createOutbox({ store: new SqliteOutboxStore(db), endpoints: [{ name: 'audit' }] });
    receiptTransaction(db, outbox, [makeReceipt(0), makeReceipt(1)]);
    const store = outbox.store as SqliteOutboxStore;
    const at = new Date().toISOString();
    expect(await store.acquireLease('audit', 'process-a', Date.now(), 10_000)).toBe(true);
    expect(await store.markDelivered('audit', 'process-b', [{ sequence: 1, status: 200, at }])).toBe(0);
    expect((await store.pending('audit', 10)).map((event) => event.sequence)).toEqual([1, 2]);
    expect(
      await store.markDelivered('audit', 'process-a', [
        { sequence: 1, status: 200, at },
        { sequence: 2, status: 204, at },
      ]),
    ).toBe(2);
    expect((await store.events('audit', { limit: 10 })).map((event) => [event.status, event.lastStatus])).toEqual([
      ['delivered', 200],
      ['delivered', 204],
    ]);
    // Marking again changes nothing (only pending events are marked).
    expect(await store.markDelivered('audit', 'process-a', [{ sequence: 1, status: 200, at }])).toBe(0);
  });

  it('onExhausted: skip, an acknowledgement is its own row: failures between keep theirs, replay --failed sends only those', async () => {
    const db = database();
    let isFixed = false;
    // Events 2 and 4 fail until the receiver is fixed; the others are acknowledged at once.
    const target = await receiver(({ body }) => ({ status: isFixed || ![2, 4].includes(sequenceOf(body)) ? 200 : 503 }));
    const endpoints = [
      {
        name: 'audit',
        url: target.url,
        secrets: () => [newWebhookSecret()],
        retry: { ...fast, attempts: 2 },
        onExhausted: 'skip' as const,
      },
    ];
    const { outbox, dispatcher } = dispatch(db, endpoints);
    receiptTransaction(
      db,
      outbox,
      Array.from({ length: 6 }, (_, index) => makeReceipt(index)),
    );
    const store = outbox.store as SqliteOutboxStore;
    await waitFor(async () => (await store.endpoint('audit'))!.counts.delivered === 4, 'four acknowledged, two given up');
    const view = async () =>
      (await store.events('audit', { limit: 10 })).map((event) => [event.sequence, event.status, event.attempts, event.lastStatus]);
    expect(await view()).toEqual([
      [1, 'delivered', 1, 200],
      [2, 'failed', 2, 503],
      [3, 'delivered', 1, 200],
      [4, 'failed', 2, 503],
      [5, 'delivered', 1, 200],
      [6, 'delivered', 1, 200],
    ]);
    expect((await store.events('audit', { status: 'delivered', limit: 10 })).map((event) => event.sequence)).toEqual([1, 3, 5, 6]);
    expect((await store.events('audit', { status: 'failed', limit: 10 })).every((event) => event.deliveredAt === null)).toBe(true);
    expect((await store.events('audit', { status: 'delivered', limit: 10 })).every((event) => event.deliveredAt !== null)).toBe(true);

    isFixed = true;
    expect(await store.replay('audit', { failed: true })).toBe(2);
    dispatcher.notify();
    await waitFor(async () => (await store.endpoint('audit'))!.counts.delivered === 6, 'the two replayed events');
    expect(delivered(target).map((request) => sequenceOf(request.body))).toEqual([1, 3, 5, 6, 2, 4]);
    expect((await view()).map(([sequence, status, attempts]) => [sequence, status, attempts])).toEqual([
      [1, 'delivered', 1],
      [2, 'delivered', 1],
      [3, 'delivered', 1],
      [4, 'delivered', 1],
      [5, 'delivered', 1],
      [6, 'delivered', 1],
    ]);
  });

  it('where the search for pending events starts follows the acknowledgements, and a replay moves it back', async () => {
    const db = database();
    const target = await receiver();
    const { outbox, dispatcher } = dispatch(db, [{ name: 'audit', url: target.url, secrets: () => [newWebhookSecret()], retry: fast }]);
    const pendingFrom = () => db.prepare("SELECT pending_from FROM webhook_endpoints WHERE name = 'audit'").pluck().get() as number;
    const before = pendingFrom();
    receiptTransaction(
      db,
      outbox,
      Array.from({ length: 300 }, (_, index) => makeReceipt(index)),
    );
    const store = outbox.store as SqliteOutboxStore;
    await waitFor(async () => (await store.endpoint('audit'))!.counts.delivered === 300, 'three hundred acknowledged events');
    expect(before).toBeLessThanOrEqual(1);
    expect(pendingFrom()).toBe(257); // moved once, at the 256th acknowledgement
    expect(await store.pending('audit', 10)).toEqual([]);

    expect(await store.replay('audit', { fromSequence: 10 })).toBe(291);
    expect(pendingFrom()).toBe(10);
    expect((await store.pending('audit', 2)).map((event) => event.sequence)).toEqual([10, 11]);
    dispatcher.notify({ reread: true });
    await waitFor(() => delivered(target).length === 591, 'the replayed events');
    // The receiver has answered the last one; the dispatcher marks it once it has read that answer.
    await waitFor(async () => (await store.endpoint('audit'))!.counts.pending === 0, 'the last acknowledgement marked');
    expect((await store.endpoint('audit'))!.counts).toEqual({ pending: 0, delivered: 300, failed: 0 });
  });

  it('a database from before acknowledgements had their own table keeps every status and delivers what was pending', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'gateway-outbox-'));
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
    const path = join(directory, 'gateway.db');
    // The first schema alone, with events in every status written as it wrote them.
    const old = openDatabase(path, outboxMigrations.slice(0, 1));
    old.exec("INSERT INTO webhook_endpoints (name) VALUES ('audit')");
    const insert = old.prepare(
      'INSERT INTO webhook_outbox ' +
        '(endpoint, sequence, event_id, receipt_id, body, status, attempts, last_status, created_at, delivered_at) ' +
        "VALUES ('audit', ?, ?, NULL, ?, ?, ?, ?, '2026-11-22T12:00:00.000Z', ?)",
    );
    const statuses = ['delivered', 'failed', 'delivered', 'pending', 'pending'] as const;
    for (const [index, status] of statuses.entries()) {
      const sequence = index + 1;
      const delivered = status === 'delivered';
      insert.run(
        sequence,
        `evt_${sequence}`,
        JSON.stringify({ sequence: String(sequence) }),
        status,
        delivered ? 1 : 8,
        delivered ? 200 : 503,
        delivered ? '2026-11-22T12:00:01.000Z' : null,
      );
    }
    old.close();

    const db = openDatabase(path, outboxMigrations);
    cleanups.push(() => db.close());
    const store = new SqliteOutboxStore(db);
    expect((await store.endpoint('audit'))!.counts).toEqual({ pending: 2, delivered: 2, failed: 1 });
    expect(db.prepare("SELECT pending_from FROM webhook_endpoints WHERE name = 'audit'").pluck().get()).toBe(4);
    expect((await store.pending('audit', 10)).map((event) => event.sequence)).toEqual([4, 5]);
    expect(
      (await store.events('audit', { status: 'delivered', limit: 10 })).map((event) => [event.sequence, event.attempts, event.lastStatus]),
    ).toEqual([
      [1, 1, 200],
      [3, 1, 200],
    ]);
  });

  it('data: detailed adds the whole receipt as details; the three specified keys stay as they are', async () => {
    const db = database();
    const outbox = createOutbox({ store: new SqliteOutboxStore(db), endpoints: [{ name: 'plain' }, { name: 'rich', data: 'detailed' }] });
    const receipt = makeReceipt(7, 'denied');
    receiptTransaction(db, outbox, [receipt]);
    const store = new SqliteOutboxStore(db);
    const read = async (endpoint: string) => {
      const body = (await store.events(endpoint, { limit: 1 }))[0]!.body;
      const event = HTTP.toEvent({ headers: { 'content-type': 'application/cloudevents+json; charset=utf-8' }, body });
      return (event as unknown as { data: Record<string, unknown> }).data;
    };
    expect(await read('plain')).toEqual({ tool: 'get_pet', outcome: 'denied', receipt: 'receipt-7' });
    expect(Object.keys(await read('rich')).sort()).toEqual(['details', 'outcome', 'receipt', 'tool']);
    expect(await read('rich')).toEqual({ tool: 'get_pet', outcome: 'denied', receipt: 'receipt-7', details: receipt });
  });

  it(
    'onExhausted: pause (the default): the endpoint stops at the event whose attempts ran out, later events wait, ' +
      'each resume gives it one bounded cycle of attempts, and every sequence arrives once, in order',
    async () => {
      const db = database();
      let isUp = false;
      const target = await receiver(() => ({ status: isUp ? 200 : 503 }));
      const endpoints = [{ name: 'audit', url: target.url, secrets: () => [newWebhookSecret()], retry: { ...fast, attempts: 3 } }];
      const { outbox, dispatcher } = dispatch(db, endpoints);
      const store = outbox.store as SqliteOutboxStore;
      receiptTransaction(
        db,
        outbox,
        Array.from({ length: 5 }, (_, index) => makeReceipt(index)),
      );
      await waitFor(async () => (await store.endpoint('audit'))!.pausedAt !== null, 'the pause');
      expect(await store.endpoint('audit')).toMatchObject({
        pausedSequence: 1,
        leaseHolder: null,
        counts: { pending: 5, delivered: 0, failed: 0 },
      });
      expect((await store.endpoint('audit'))!.pausedReason).toContain('evt_receipt-0_audit');
      expect(target.requests.map((request) => sequenceOf(request.body))).toEqual([1, 1, 1]);
      // Paused: later events wait, and no process may take the lease.
      receiptTransaction(db, outbox, [makeReceipt(5), makeReceipt(6)]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(target.requests).toHaveLength(3);
      expect(await store.acquireLease('audit', 'another-process', Date.now(), 10_000)).toBe(false);

      // A resume while the receiver is still down: one more bounded cycle (three attempts), then paused again.
      expect(await store.resume('audit')).toEqual({ pausedSequence: 1, wasPaused: true, wasDisabled: false });
      dispatcher.notify({ reread: true });
      await waitFor(
        async () => target.requests.length === 6 && (await store.endpoint('audit'))!.pausedAt !== null,
        'the second cycle and pause',
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(target.requests.map((request) => sequenceOf(request.body))).toEqual([1, 1, 1, 1, 1, 1]);

      isUp = true;
      await store.resume('audit');
      dispatcher.notify({ reread: true });
      await waitFor(async () => (await store.endpoint('audit'))!.counts.delivered === 7, 'every event after the resume');
      expect(delivered(target).map((request) => sequenceOf(request.body))).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(await store.endpoint('audit')).toMatchObject({
        pausedAt: null,
        pausedSequence: null,
        counts: { pending: 0, delivered: 7, failed: 0 },
      });
    },
  );

  it('a pause is in the database: another process on the same file delivers nothing until the endpoint is resumed', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'gateway-outbox-'));
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
    const path = join(directory, 'gateway.db');
    const handles = [openDatabase(path, outboxMigrations), openDatabase(path, outboxMigrations)];
    cleanups.push(...handles.map((handle) => () => handle.close()));
    let isUp = false;
    const target = await receiver(() => ({ status: isUp ? 200 : 503 }));
    const endpoints = [{ name: 'audit', url: target.url, secrets: () => [newWebhookSecret()], retry: { ...fast, attempts: 2 } }];
    const outboxes = handles.map((handle) => createOutbox({ store: new SqliteOutboxStore(handle), endpoints }));
    const dispatchers = outboxes.map((outbox, index) =>
      createDispatcher({ store: outbox.store, endpoints, agent: loopbackAgent, holder: `process-${index}`, pollIntervalMs: 20 }),
    );
    for (const dispatcher of dispatchers) {
      dispatcher.start();
      cleanups.push(() => dispatcher.stop());
    }
    receiptTransaction(handles[0]!, outboxes[0]!, [makeReceipt(0), makeReceipt(1)]);
    receiptTransaction(handles[1]!, outboxes[1]!, [makeReceipt(2)]);
    const stores = outboxes.map((outbox) => outbox.store as SqliteOutboxStore);
    await waitFor(async () => (await stores[1]!.endpoint('audit'))!.pausedAt !== null, 'the pause, seen from the other handle');
    isUp = true;
    // Both processes poll for the lease every 20 ms: neither delivers while the pause is stored.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(target.requests.map((request) => [sequenceOf(request.body), request.status])).toEqual([
      [1, 503],
      [1, 503],
    ]);
    // Resumed through the first handle, without waking the second process: whichever takes the lease delivers.
    await stores[0]!.resume('audit');
    await waitFor(async () => (await stores[1]!.endpoint('audit'))!.counts.delivered === 3, 'all three events');
    expect(delivered(target).map((request) => sequenceOf(request.body))).toEqual([1, 2, 3]);
  });

  it(
    'a signed checkpoint becomes an event in the same per-endpoint stream as receipts, only where types subscribe, ' +
      'in the checkpoint row’s transaction',
    async () => {
      const db = database([...receiptMigrations, ...outboxMigrations]);
      const outbox = createOutbox({
        store: new SqliteOutboxStore(db),
        endpoints: [
          { name: 'audit' },
          { name: 'anchor', types: ['io.service.call.receipted', 'io.service.receipts.checkpoint'] },
          { name: 'checkpoints', types: ['io.service.receipts.checkpoint'] },
        ],
      });
      const storage = sqliteReceiptStorage(db);
      const receipts = storage.store;
      const key = generateKeyPairSync('ed25519').privateKey;
      const append = async (index: number) => {
        const { id: _id, index: _leaf, ...draft } = makeReceipt(index);
        await createReceiptWriter(storage, [outbox]).append([draft]);
      };
      const addCheckpoint = (stored: StoredCheckpoint, hooks: ReceiptHook[]) =>
        createReceiptWriter(storage, hooks).addCheckpoint(async () => stored);
      const checkpoint = async () => {
        const head = await receipts.head();
        const note = signNote(
          formatCheckpoint({ origin: 'gateway.test/receipts', size: head.size, rootHash: head.rootHash }),
          'gateway.test/receipts',
          key,
        );
        return { treeSize: head.size, rootHash: head.rootHash, note, verifierKey: 'key', createdAt: new Date().toISOString() };
      };
      await append(0);
      await append(1);
      const second = await checkpoint();
      await addCheckpoint(second, [outbox]);
      // The same tree size stored again (another process signed it first): no second event.
      await addCheckpoint(second, [outbox]);
      await append(2);
      // A hook that fails after the outbox wrote: the checkpoint row and its events roll back together.
      const third = await checkpoint();
      const failing = {
        onReceipt: () => undefined,
        onCheckpoint: () => {
          throw new Error('disk full');
        },
      };
      await expect(addCheckpoint(third, [outbox, failing])).rejects.toThrow('disk full');
      expect((await receipts.latestCheckpoint())!.treeSize).toBe(2);
      await addCheckpoint(third, [outbox]);

      const store = new SqliteOutboxStore(db);
      const stream = async (endpoint: string) =>
        (await store.events(endpoint, { limit: 100 })).map((event) => [event.sequence, event.eventId]);
      expect(await stream('anchor')).toEqual([
        [1, 'evt_receipt-0_anchor'],
        [2, 'evt_receipt-1_anchor'],
        [3, 'evt_checkpoint-2_anchor'],
        [4, 'evt_receipt-2_anchor'],
        [5, 'evt_checkpoint-3_anchor'],
      ]);
      expect((await stream('audit')).map(([, id]) => id)).toEqual(['evt_receipt-0_audit', 'evt_receipt-1_audit', 'evt_receipt-2_audit']);
      expect(await stream('checkpoints')).toEqual([
        [1, 'evt_checkpoint-2_checkpoints'],
        [2, 'evt_checkpoint-3_checkpoints'],
      ]);
      const body = (await store.events('checkpoints', { limit: 1 }))[0]!.body;
      const event = HTTP.toEvent({ headers: { 'content-type': 'application/cloudevents+json; charset=utf-8' }, body }) as unknown as {
        type: string;
        data: Record<string, unknown>;
      };
      expect(event.type).toBe('io.service.receipts.checkpoint');
      expect(event.data).toEqual({
        origin: 'gateway.test/receipts',
        treeSize: 2,
        rootHash: second.rootHash.toString('base64'),
        note: second.note,
      });
      expect(Object.keys(event.data).sort()).toEqual(['note', 'origin', 'rootHash', 'treeSize']);
    },
  );

  it('the SSRF guard applies: a loopback endpoint is refused unless network.allowPrivateNetworks lists it', async () => {
    const db = database();
    const target = await receiver();
    const endpoints = [{ name: 'audit', url: target.url, secrets: () => [newWebhookSecret()], retry: { ...fast, attempts: 1 } }];
    const outbox = createOutbox({ store: new SqliteOutboxStore(db), endpoints });
    const dispatcher = createDispatcher({ store: outbox.store, endpoints, agent: createGuardedAgent({}), pollIntervalMs: 20 });
    outbox.subscribe(() => dispatcher.notify());
    dispatcher.start();
    cleanups.push(() => dispatcher.stop());
    receiptTransaction(db, outbox, [makeReceipt(0)]);
    const store = outbox.store as SqliteOutboxStore;
    await waitFor(async () => (await store.endpoint('audit'))!.pausedAt !== null, 'the endpoint paused at the refused event');
    expect((await store.events('audit', { limit: 1 }))[0]!.lastError).toContain('SSRF_ADDRESS_REFUSED');
    expect(target.requests).toHaveLength(0);
  });
});

describe('events staged per transaction', () => {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  function outboxOnNewDatabase(endpoints: OutboxEndpoint[]) {
    const directory = mkdtempSync(join(tmpdir(), 'gateway-outbox-'));
    const db = openDatabase(join(directory, 'gateway.db'), outboxMigrations);
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
    cleanups.push(() => db.close());
    const outbox = createOutbox({ store: new SqliteOutboxStore(db), endpoints });
    // What each wake handed over: the events' ids (an empty list: read the store).
    const heard: string[][] = [];
    outbox.subscribe((committed) => heard.push(committed.map((event) => event.eventId)));
    return { db, outbox, heard, unitOfWork: sqliteUnitOfWork(db) };
  }

  const turns = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('in a unit of work, events are handed over only after its commit; a rolled-back one hands over nothing', async () => {
    const { outbox, heard, unitOfWork } = outboxOnNewDatabase([{ name: 'audit' }]);
    const receipts = [makeReceipt(0), makeReceipt(1), makeReceipt(2)];
    const transactions: Transaction[] = [];
    await unitOfWork.run(async (tx) => {
      transactions.push(tx);
      expect((await outbox.enqueue(receipts[0]!, tx)).map((event) => event.sequence)).toEqual([1]);
      // The transaction stays open across several turns of the event loop: nothing is announced meanwhile.
      await turns(30);
      expect(heard).toEqual([]);
    });
    outbox.afterCommit([receipts[0]!], transactions[0]);
    await waitFor(() => heard.length === 1, 'the hand-over after the commit');
    expect(heard).toEqual([['evt_receipt-0_audit']]);

    await expect(
      unitOfWork.run(async (tx) => {
        await outbox.onReceipt(receipts[1]!, tx);
        throw new Error('the receipt could not be stored');
      }),
    ).rejects.toThrow('the receipt could not be stored');
    await unitOfWork.run(async (tx) => {
      transactions.push(tx);
      await outbox.onReceipt(receipts[2]!, tx);
    });
    outbox.afterCommit([receipts[2]!], transactions[1]);
    await waitFor(() => heard.length === 2, 'the second hand-over');
    await turns(30);
    expect(heard).toEqual([['evt_receipt-0_audit'], ['evt_receipt-2_audit']]);
    expect((await outbox.store.events('audit', { limit: 10 })).map((event) => [event.sequence, event.receiptId])).toEqual([
      [1, 'receipt-0'],
      [2, 'receipt-2'],
    ]);
  });

  it('units of work open at once: each hands over its own events when it commits, in commit order; a rollback never', async () => {
    // As on PostgreSQL, where several transactions are open at once (here three transaction objects share one
    // SQLite transaction: the staging, not the store, is what this proves).
    const { db, outbox, heard } = outboxOnNewDatabase([{ name: 'audit' }, { name: 'denied', outcomes: ['denied'] }]);
    const [first, second, rolledBack] = [
      { adapter: 'sqlite' },
      { adapter: 'sqlite' },
      { adapter: 'sqlite' },
    ] as const satisfies readonly Transaction[];
    const receipts = [makeReceipt(0), makeReceipt(1, 'denied'), makeReceipt(2)];
    db.transaction(() => {
      void outbox.onReceipt(receipts[0]!, first);
      void outbox.onReceipt(receipts[1]!, second);
      void outbox.onReceipt(receipts[2]!, rolledBack);
    })();
    await turns(30);
    expect(heard).toEqual([]);
    // The second commits first.
    outbox.afterCommit([receipts[1]!], second);
    await waitFor(() => heard.length === 1, 'the second transaction’s events');
    expect(heard).toEqual([['evt_receipt-1_audit', 'evt_receipt-1_denied']]);
    outbox.afterCommit([receipts[0]!], first);
    await waitFor(() => heard.length === 2, 'the first transaction’s events');
    await turns(30);
    expect(heard).toEqual([['evt_receipt-1_audit', 'evt_receipt-1_denied'], ['evt_receipt-0_audit']]);
  });

  it('a checkpoint appended in a unit of work wakes the dispatcher to read the store after its commit', async () => {
    const { outbox, heard, unitOfWork } = outboxOnNewDatabase([{ name: 'anchor', types: ['io.service.receipts.checkpoint'] }]);
    const checkpoint = {
      treeSize: 4,
      rootHash: Buffer.alloc(32, 7),
      note: 'gateway.test/receipts\n4\n',
      createdAt: new Date().toISOString(),
    };
    let transaction: Transaction | undefined;
    await unitOfWork.run(async (tx) => {
      transaction = tx;
      await outbox.onCheckpoint(checkpoint, tx);
      await turns(30);
      expect(heard).toEqual([]);
    });
    outbox.afterCommit([], transaction);
    await waitFor(() => heard.length === 1, 'the wake after the checkpoint’s commit');
    expect(heard).toEqual([[]]);
    expect((await outbox.store.events('anchor', { limit: 10 })).map((event) => event.eventId)).toEqual(['evt_checkpoint-4_anchor']);
  });
});

describe('retry timing', () => {
  const settings = retrySettings({ initialDelayMs: 1_000, maxDelayMs: 300_000 });

  it('the documented defaults: 8 attempts, 1 s initial backoff capped at 5 min, 10 s per attempt', () => {
    expect(retrySettings(undefined)).toEqual({ attempts: 8, initialDelayMs: 1_000, maxDelayMs: 300_000, timeoutMs: 10_000 });
  });

  it('backoff doubles per failed attempt with full jitter under the cap', () => {
    expect(retryDelayMs(settings, 1, undefined, () => 0.999)).toBe(999);
    expect(retryDelayMs(settings, 4, undefined, () => 0.5)).toBe(4_000);
    expect(retryDelayMs(settings, 20, undefined, () => 0.999)).toBe(299_700);
    expect(retryDelayMs(settings, 3, undefined, () => 0)).toBe(0);
  });

  it('Retry-After is read as seconds or an HTTP date, and capped', () => {
    const now = Date.parse('2026-11-22T12:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 11:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(retryDelayMs(settings, 1, 3_600_000, Math.random)).toBe(300_000);
    expect(retryDelayMs(settings, 1, 30_000, Math.random)).toBe(30_000);
  });
});
