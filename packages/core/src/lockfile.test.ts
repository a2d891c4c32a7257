import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lockedOperation } from '../test/fixtures.js';
import {
  GatewayError,
  emptyLock,
  nestingDepth,
  parseLock,
  readLockFile,
  serialiseLock,
  writeLockFile,
  type JsonSchema,
  type Lockfile,
} from './index.js';
import { LOCK_MAX_DEPTH, MAX_INPUT_SCHEMA_DEPTH } from './lockfile.js';

describe('lockfile', () => {
  it('serialises an empty lock deterministically and reads it back', () => {
    const text = serialiseLock(emptyLock());
    expect(text).toBe(serialiseLock(parseLock(text)));
    expect(parseLock(text)).toEqual(emptyLock());
  });

  it('refuses a lock that does not match the schema, naming the problem', () => {
    const broken = { ...emptyLock(), lockVersion: 2 } as unknown as Lockfile;
    expect(() => parseLock(JSON.stringify(broken))).toThrowError(GatewayError);
    try {
      parseLock('lockVersion: 1\nlastPublication: 0\nsources: []\nextra: 1\n');
      expect.unreachable('an unknown key must be refused');
    } catch (error) {
      expect((error as GatewayError).code).toBe('LOCK_SCHEMA_INVALID');
      expect((error as GatewayError).message).toContain("'extra'");
    }
  });

  it('refuses YAML aliases in a lock', () => {
    expect(() => parseLock('a: &x 1\nlockVersion: 1\nlastPublication: *x\nsources: []\n')).toThrowError(/not valid YAML/);
  });

  it('refuses duplicate keys in a lock', () => {
    expect(() => parseLock('lockVersion: 1\nlastPublication: 0\nlastPublication: 3\nsources: []\n')).toThrowError(/not valid YAML/);
  });
});

/** An object schema `depth` levels deep (the schema itself is level 1): `items` of arrays all the way down. */
function schemaOfDepth(depth: number): JsonSchema {
  let schema: Record<string, unknown> = { type: 'string' };
  for (let level = 1; level < depth; level += 1) schema = { type: 'array', items: schema };
  return schema;
}

function lockWithSchema(inputSchema: JsonSchema): Lockfile {
  const operation = lockedOperation('deep', 'POST', '/deep', { inputSchema });
  return {
    lockVersion: 1,
    lastPublication: 0,
    sources: [
      {
        name: 'deep',
        kind: 'openapi',
        document: 'openapi.json',
        documentDigest: `sha256:${'0'.repeat(64)}`,
        publications: [
          { id: 'publication-1', status: 'proposed', toolCount: 1, documentDigest: `sha256:${'0'.repeat(64)}`, operations: [operation] },
        ],
      },
    ],
  };
}

describe('a lock the gateway writes is always one it can read', () => {
  it('counts nesting without recursion', () => {
    expect(nestingDepth(1)).toBe(0);
    expect(nestingDepth({})).toBe(1);
    expect(nestingDepth(schemaOfDepth(3))).toBe(3);
    let deep: unknown[] = [];
    for (let level = 1; level < 200_000; level += 1) deep = [deep];
    expect(nestingDepth(deep)).toBe(200_000);
    expect(nestingDepth(deep, 10)).toBe(11);
  });

  it('a 100-level schema, and one at MAX_INPUT_SCHEMA_DEPTH, is written and read back', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'gateway-lock-depth-'));
    try {
      for (const depth of [100, MAX_INPUT_SCHEMA_DEPTH]) {
        const lock = lockWithSchema(schemaOfDepth(depth));
        expect(nestingDepth(lock)).toBe(depth + (LOCK_MAX_DEPTH - MAX_INPUT_SCHEMA_DEPTH));
        const path = join(directory, `tools-${depth}.lock`);
        await writeLockFile(path, lock);
        const read = await readLockFile(path);
        expect(nestingDepth(read.sources[0]!.publications[0]!.operations[0]!.inputSchema)).toBe(depth);
      }
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('one level more is refused by the writer with a document error, and nothing is written', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'gateway-lock-depth-'));
    try {
      const path = join(directory, 'tools.lock');
      const lock = lockWithSchema(schemaOfDepth(MAX_INPUT_SCHEMA_DEPTH + 1));
      await expect(writeLockFile(path, lock)).rejects.toMatchObject({ code: 'LOCK_NESTING_TOO_DEEP', category: 'document' });
      await expect(access(path)).rejects.toThrow();
      // The reader refuses exactly what the writer refuses.
      expect(() => parseLock(serialiseLock(lock))).toThrowError(/maxDepth/);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});
