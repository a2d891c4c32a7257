import { describeToolChanges } from '@gateway/core';
import { describe, expect, it } from 'vitest';
import { lockedOperation, lockWith } from '../../test/support/fixtures.js';
import { PublicationRegistry } from './registry.js';

describe('served tool versions (what re-approval compares with)', () => {
  it('a version served before a republication is still found by tool name and fingerprint; an unknown one is not', () => {
    const registry = new PublicationRegistry();
    const before = lockedOperation({ tool: 'search_orders', method: 'GET', path: '/orders' });
    registry.replace(lockWith([before]));
    const after = lockedOperation({
      tool: 'search_orders',
      method: 'GET',
      path: '/orders',
      parameters: [{ in: 'query', name: 'owner', argument: 'owner', required: true, style: 'form', explode: true, allowReserved: false }],
      inputSchema: { type: 'object', properties: { owner: { type: 'string' } }, required: ['owner'], additionalProperties: false },
    });
    registry.replace(lockWith([after], { publicationId: 'publication-2' }));

    expect(before.fingerprint).not.toBe(after.fingerprint);
    const served = registry.servedEntry('search_orders', before.fingerprint);
    expect(served).toEqual(before);
    expect(describeToolChanges(served!, registry.snapshot().tools.get('search_orders')!.entry).map((change) => change.message)).toEqual([
      'query parameter owner added (string, required)',
    ]);
    expect(registry.servedEntry('search_orders', 'sha256:never-served')).toBeUndefined();
    expect(registry.servedEntry('other_tool', after.fingerprint)).toBeUndefined();
  });
});
