import { fingerprintOf, type LockedOperation } from '../src/index.js';

/** A supported, selected operation with a correct fingerprint; `extra` overrides any field first. */
export function lockedOperation(tool: string, method: string, path: string, extra: Partial<LockedOperation> = {}): LockedOperation {
  const built: LockedOperation = {
    tool,
    operationId: tool,
    method,
    path,
    title: null,
    description: `${tool} does something`,
    status: 'supported',
    reason: null,
    selected: true,
    server: 'http://127.0.0.1:4010',
    parameters: [],
    body: null,
    security: [],
    securitySchemes: {},
    inputSchema: { type: 'object', properties: {} },
    fingerprint: '',
    ...extra,
  };
  return { ...built, fingerprint: fingerprintOf(built) };
}
