import { readFile, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { repositoryRoot, runGateway } from '../../../test-support/cli.js';
import { createPublishingWorkspace, type PublishingWorkspace } from './publishing-workspace.js';

interface Report {
  ok: boolean;
  problems: Array<{ code: string; source?: string; publication?: string; tool?: string; message: string }>;
}

/** Path of an operation inside the parsed lock YAML, by tool name. */
function operationPath(text: string, tool: string): (string | number)[] {
  const document = parseDocument(text);
  const operations = document.getIn(['sources', 0, 'publications', 0, 'operations']) as { items: Array<{ get(key: string): unknown }> };
  const index = operations.items.findIndex((item) => item.get('tool') === tool);
  expect(index, `tool ${tool} in the lock`).toBeGreaterThanOrEqual(0);
  return ['sources', 0, 'publications', 0, 'operations', index];
}

/** Edits the lock the way a person would (YAML in, YAML out; comments and layout kept). */
function editLock(text: string, edit: (document: ReturnType<typeof parseDocument>) => void): string {
  const document = parseDocument(text);
  edit(document);
  return document.toString({ lineWidth: 0 });
}

describe('gateway verify', () => {
  let workspace: PublishingWorkspace;
  let published: string;
  beforeAll(async () => {
    workspace = await createPublishingWorkspace();
    await workspace.importAndPublish('orders');
    published = await workspace.read('tools.lock');
  });
  afterAll(async () => {
    await workspace.cleanup();
  });

  async function verifyWith(lockText: string): Promise<{ exitCode: number; report: Report; stdout: string }> {
    await writeFile(workspace.lockPath, lockText);
    const result = await workspace.gateway('--json', 'verify');
    return { exitCode: result.exitCode ?? -1, report: JSON.parse(result.stdout) as Report, stdout: result.stdout };
  }

  it('passes after import → review → publish, with a human report', async () => {
    await writeFile(workspace.lockPath, published);
    const result = await workspace.gateway('verify');
    expect(result.exitCode, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain('publication-1 in use, 4 tools');
    expect(result.stdout.trim().endsWith('ok')).toBe(true);
    const json = await verifyWith(published);
    expect(json.report).toMatchObject({ ok: true, problems: [] });
  });

  const tampering: Array<{ what: string; edit: (text: string) => string; code: string; tool?: string }> = [
    {
      what: 'a path',
      edit: (text) => editLock(text, (document) => document.setIn([...operationPath(text, 'get_order'), 'path'], '/admin/{orderId}')),
      code: 'LOCK_FINGERPRINT_MISMATCH',
      tool: 'get_order',
    },
    {
      what: 'an input schema',
      edit: (text) =>
        editLock(text, (document) =>
          document.setIn([...operationPath(text, 'search_orders'), 'inputSchema', 'properties', 'limit', 'maximum'], 100000),
        ),
      code: 'LOCK_FINGERPRINT_MISMATCH',
      tool: 'search_orders',
    },
    {
      what: 'a tool name',
      edit: (text) => editLock(text, (document) => document.setIn([...operationPath(text, 'delete_order'), 'tool'], 'archive_order')),
      code: 'LOCK_SIGNATURE_INVALID',
      tool: 'archive_order',
    },
    {
      what: 'the status',
      edit: (text) => editLock(text, (document) => document.setIn(['sources', 0, 'publications', 0, 'status'], 'proposed')),
      code: 'LOCK_SIGNATURE_INVALID',
    },
    {
      what: 'the tool count',
      edit: (text) => editLock(text, (document) => document.setIn(['sources', 0, 'publications', 0, 'toolCount'], 3)),
      code: 'LOCK_TOOL_COUNT_MISMATCH',
    },
    {
      what: 'the signature',
      edit: (text) =>
        editLock(text, (document) => {
          const signature = String(document.getIn(['sources', 0, 'publications', 0, 'signature']));
          const last = signature.at(-2) === 'A' ? 'B' : 'A';
          document.setIn(['sources', 0, 'publications', 0, 'signature'], `${signature.slice(0, -2)}${last}${signature.at(-1)}`);
        }),
      code: 'LOCK_SIGNATURE_INVALID',
    },
    {
      what: 'the signature removed',
      edit: (text) => editLock(text, (document) => document.deleteIn(['sources', 0, 'publications', 0, 'signature'])),
      code: 'LOCK_SIGNATURE_MISSING',
    },
    {
      what: 'the publisher',
      edit: (text) => editLock(text, (document) => document.setIn(['sources', 0, 'publications', 0, 'publishedBy'], 'someone-else')),
      code: 'LOCK_SIGNATURE_INVALID',
    },
  ];

  for (const { what, edit, code, tool } of tampering) {
    it(`changing ${what} in the lock fails verification (exit 6) with ${code}${tool ? ` naming ${tool}` : ''}`, async () => {
      const edited = edit(published);
      expect(edited).not.toBe(published);
      const { exitCode, report } = await verifyWith(edited);
      expect(exitCode).toBe(6);
      expect(report.ok).toBe(false);
      const matching = report.problems.filter((problem) => problem.code === code);
      expect(matching.length, JSON.stringify(report.problems)).toBeGreaterThan(0);
      if (tool) expect(matching.map((problem) => problem.tool)).toContain(tool);
      expect(matching.every((problem) => problem.source === 'orders' && problem.publication === 'publication-1')).toBe(true);
    });
  }

  it('prints each problem with its code and location in the human report', async () => {
    await writeFile(workspace.lockPath, tampering[0]!.edit(published));
    const result = await workspace.gateway('verify');
    expect(result.exitCode).toBe(6);
    expect(result.stdout).toContain('FAILED verification');
    expect(result.stdout).toContain('LOCK_FINGERPRINT_MISMATCH  orders/publication-1 get_order');
  });

  it('reports a lock that breaks the lockfile schema as LOCK_SCHEMA_INVALID (exit 6)', async () => {
    const { exitCode, report } = await verifyWith(published.replace('status: in use', 'status: retired'));
    expect(exitCode).toBe(6);
    expect(report.problems.map((problem) => problem.code)).toEqual(['LOCK_SCHEMA_INVALID']);
  });

  it('fails when the signing key is no longer trusted (LOCK_KEY_UNTRUSTED)', async () => {
    const config = await workspace.read('gateway.yaml');
    try {
      expect((await workspace.gateway('keys', 'generate', '--out', 'other', '--name', 'other')).exitCode).toBe(0);
      await workspace.write('gateway.yaml', config.replace('./keys/team.pub.jwk', './other/other.pub.jwk'));
      const { exitCode, report } = await verifyWith(published);
      expect(exitCode).toBe(6);
      expect(report.problems.map((problem) => problem.code)).toEqual(['LOCK_KEY_UNTRUSTED']);
    } finally {
      await workspace.write('gateway.yaml', config);
    }
  });

  it('fails when the lock and gateway.yaml disagree on sources (missing, orphan, moved)', async () => {
    const config = await workspace.read('gateway.yaml');
    try {
      await workspace.write(
        'gateway.yaml',
        config.replace('sources:\n', 'sources:\n  billing:\n    kind: openapi\n    document: ./billing.yaml\n'),
      );
      let result = await verifyWith(published);
      expect(result.report.problems.map((problem) => [problem.code, problem.source])).toEqual([['LOCK_SOURCE_MISSING', 'billing']]);
      await workspace.write('gateway.yaml', config.replace('document: ./orders.yaml', 'document: ./orders-v2.yaml'));
      result = await verifyWith(published);
      expect(result.report.problems.map((problem) => [problem.code, problem.source])).toEqual([['LOCK_SOURCE_MISMATCH', 'orders']]);
      await workspace.write('gateway.yaml', config.replace(/sources:\n(.|\n)*?trust:/, 'sources: {}\ntrust:'));
      result = await verifyWith(published);
      expect(result.report.problems.map((problem) => [problem.code, problem.source])).toEqual([['LOCK_SOURCE_ORPHAN', 'orders']]);
      expect(result.exitCode).toBe(6);
    } finally {
      await workspace.write('gateway.yaml', config);
    }
  });
});

describe('the repository root', () => {
  it('tools.lock verifies against the bundled gateway.yaml (exit 0)', async () => {
    const result = await runGateway(['verify'], { cwd: repositoryRoot });
    expect(result.exitCode, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain('orders  publication-');
    const lock = await readFile(`${repositoryRoot}/tools.lock`, 'utf8');
    for (const tool of ['search_orders', 'get_order', 'create_order', 'delete_order']) expect(lock).toContain(`tool: ${tool}`);
  });
});
