import { describe, expect, it } from 'vitest';
import { PublicationRegistry } from '../publications/registry.js';
import { lockWith, lockedOperation } from '../../test/support/fixtures.js';
import type { McpCaller } from '../calls/caller.js';
import { pino } from 'pino';
import { createCallPipeline } from '../calls/pipeline.js';
import { createExecutor, NO_CREDENTIALS } from '../execute/index.js';
import { encodeCursor, listToolsPage } from './tools.js';

const names = ['alpha', 'bravo', 'charlie', 'delta', 'echo'];
const registry = new PublicationRegistry();
registry.replace(
  lockWith(
    names.map((name) => lockedOperation({ tool: name, method: 'GET', path: `/${name}`, server: 'http://127.0.0.1:1' })),
    { proposed: [lockedOperation({ tool: 'zulu_proposed', method: 'GET', path: '/z' })] },
  ),
);
const snapshot = registry.snapshot();
// Calls are decided by the one call pipeline (calls/pipeline.ts); lists must agree with it.
const pipeline = createCallPipeline({
  registry,
  authorizer: { authenticate: async () => ({ ok: false, status: 401, headers: {}, body: null }), sessionState: () => 'open' },
  executor: createExecutor({
    credentials: { resolve: async () => NO_CREDENTIALS },
    dispatcherFor: () => undefined as never,
    limitsFor: () => ({ connectMs: 1, totalMs: 1, maxResponseBytes: 1 }),
  }),
  receipts: undefined,
  logger: pino({ level: 'silent' }),
});

async function refusalOf(who: McpCaller, name: string): Promise<{ reason: string; message: string } | null> {
  const verdict = (await pipeline.decide(who, name)).verdict;
  return verdict.kind === 'allow' ? null : verdict;
}

function caller(tools: string[], overrides: Record<string, string> = {}): McpCaller {
  return {
    sessionId: 'session-1',
    subject: 's',
    clientId: 'c',
    tools: new Map(tools.map((name) => [name, overrides[name] ?? snapshot.tools.get(name)?.entry.fingerprint ?? 'sha256:x'])),
    logins: new Set(),
    expiresAt: Date.now() + 60_000,
  };
}

describe('tools/list pagination and filtering', () => {
  it('pages in name order with opaque cursors until the end', () => {
    const everyone = caller([...names, 'zulu_proposed']);
    const first = listToolsPage(snapshot, registry, everyone, undefined, 2);
    expect(first.tools.map((tool) => tool.name)).toEqual(['alpha', 'bravo']);
    const second = listToolsPage(snapshot, registry, everyone, first.nextCursor, 2);
    expect(second.tools.map((tool) => tool.name)).toEqual(['charlie', 'delta']);
    const third = listToolsPage(snapshot, registry, everyone, second.nextCursor, 2);
    expect(third.tools.map((tool) => tool.name)).toEqual(['echo']);
    expect(third.nextCursor).toBeUndefined();
  });

  it('a proposed publication is never listed or callable', async () => {
    const everyone = caller([...names, 'zulu_proposed']);
    expect(listToolsPage(snapshot, registry, everyone, '', 100).tools.map((tool) => tool.name)).not.toContain('zulu_proposed');
    expect((await refusalOf(everyone, 'zulu_proposed'))?.reason).toBe('TOOL_UNKNOWN');
  });

  it('lists only the session tools, and not a tool whose fingerprint differs from the approved one', async () => {
    const some = caller(['bravo', 'delta'], { delta: 'sha256:approved-before-a-change' });
    expect(listToolsPage(snapshot, registry, some, undefined, 100).tools.map((tool) => tool.name)).toEqual(['bravo']);
    expect((await refusalOf(some, 'delta'))?.reason).toBe('TOOL_CHANGED_SINCE_APPROVAL');
    expect((await refusalOf(some, 'alpha'))?.reason).toBe('TOOL_NOT_IN_SESSION');
    expect(await refusalOf(some, 'bravo')).toBeNull();
  });

  it('a bad cursor is -32602 and an empty cursor means the start', () => {
    const everyone = caller(names);
    expect(() => listToolsPage(snapshot, registry, everyone, 'garbage!', 2)).toThrow(expect.objectContaining({ code: -32602 }));
    expect(() => listToolsPage(snapshot, registry, everyone, Buffer.from('{"x":1}').toString('base64url'), 2)).toThrow(
      expect.objectContaining({ code: -32602 }),
    );
    expect(listToolsPage(snapshot, registry, everyone, '', 1).tools[0]!.name).toBe('alpha');
    expect(listToolsPage(snapshot, registry, everyone, encodeCursor('charlie'), 10).tools.map((tool) => tool.name)).toEqual([
      'delta',
      'echo',
    ]);
  });

  it('drift-blocked tools are omitted and refused with the reason', async () => {
    const everyone = caller(names);
    registry.setBlocked('orders', new Map([['charlie', 'the operation changed']]));
    try {
      expect(listToolsPage(snapshot, registry, everyone, undefined, 100).tools.map((tool) => tool.name)).toEqual([
        'alpha',
        'bravo',
        'delta',
        'echo',
      ]);
      const refusal = await refusalOf(everyone, 'charlie');
      expect(refusal?.reason).toBe('TOOL_BLOCKED_BY_DRIFT');
      expect(refusal?.message).toContain('the operation changed');
    } finally {
      registry.setBlocked('orders', new Map());
    }
  });
});

describe('annotations', () => {
  it.each([
    ['GET', { readOnlyHint: true }],
    ['HEAD', { readOnlyHint: true }],
    ['QUERY', { readOnlyHint: true }],
    ['POST', { readOnlyHint: false, destructiveHint: false, idempotentHint: false }],
    ['PUT', { readOnlyHint: false, destructiveHint: false, idempotentHint: true }],
    ['PATCH', { readOnlyHint: false, destructiveHint: false, idempotentHint: false }],
    ['DELETE', { readOnlyHint: false, destructiveHint: true, idempotentHint: true }],
  ] as const)('%s', (method, expected) => {
    const local = new PublicationRegistry();
    local.replace(lockWith([lockedOperation({ tool: 'x', method, path: '/x', title: 'Do X' })]));
    const annotations = local.snapshot().tools.get('x')!.listed.annotations;
    expect(annotations).toMatchObject({ ...expected, title: 'Do X' });
    if (expected.readOnlyHint) expect(annotations.destructiveHint).toBeUndefined();
  });
});
