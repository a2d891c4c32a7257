import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repositoryRoot } from '../../../test-support/cli.js';
import { startHarness, type Harness } from './support/harness.js';

/**
 * The MCP conformance suite against the gateway from the test harness (docs/conformance.md):
 * 0.1.13 speaks 2025-11-25 and runs on Node 20; 0.2.0-alpha.12 runs the 2026-07-28 requirement set and needs
 * Node 24 (`npm i --prefix .tmp/node24 node@24`, done by .ci/run).
 */
const conformance2025 = join(repositoryRoot, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const conformance2026 = join(repositoryRoot, 'node_modules', 'conformance-2026', 'dist', 'index.js');
const node24 = join(repositoryRoot, '.tmp', 'node24', 'node_modules', '.bin', 'node');
const expectedFailures = join(repositoryRoot, 'packages', 'server', 'test', 'conformance-expected-failures.yaml');

let harness: Harness;
let output: string;

beforeAll(async () => {
  harness = await startHarness();
  output = await mkdtemp(join(tmpdir(), 'gateway-conformance-'));
});

afterAll(async () => {
  await harness?.stop();
  if (output) await rm(output, { recursive: true, force: true });
});

/** Every check of every scenario run into `directory`, as `scenario/check-id → status`. */
async function checksIn(directory: string): Promise<Map<string, string>> {
  const statuses = new Map<string, string>();
  for (const entry of await readdir(directory)) {
    const file = join(directory, entry, 'checks.json');
    if (!existsSync(file)) continue;
    const scenario = entry.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T.*$/, '');
    for (const check of JSON.parse(await readFile(file, 'utf8')) as Array<{ id: string; status: string }>) {
      statuses.set(`${scenario}/${check.id}`, check.status);
    }
  }
  return statuses;
}

describe('MCP conformance 0.1.13 (2025-11-25)', () => {
  it.each(['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'])('scenario %s passes', async (scenario) => {
    const directory = join(output, `2025-${scenario}`);
    const result = await execa('node', [conformance2025, 'server', '--url', harness.mcpUrl, '--scenario', scenario, '-o', directory], {
      reject: false,
      timeout: 120_000,
    });
    expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(0);
    const checks = await checksIn(directory);
    expect(checks.size).toBeGreaterThan(0);
    for (const [id, status] of checks) expect(`${id}: ${status}`).toBe(`${id}: SUCCESS`);
  });
});

describe('MCP conformance 0.2.0-alpha.12 --requirements 2026-07-28 (Node 24)', () => {
  it('the required scenarios that apply to a tools gateway pass; every other failure is listed as not applicable', async () => {
    if (!existsSync(node24)) {
      throw new Error(`Node 24 is missing at ${node24}: run \`npm i --prefix .tmp/node24 node@24\` (the 2026-07-28 runner needs it)`);
    }
    const directory = join(output, '2026');
    const result = await execa(
      node24,
      [
        conformance2026,
        'server',
        '--url',
        harness.mcpUrl,
        '--requirements',
        '2026-07-28',
        '--expected-failures',
        expectedFailures,
        '-o',
        directory,
      ],
      { reject: false, timeout: 300_000 },
    );
    const checks = await checksIn(directory);
    expect(result.exitCode, `${result.stdout}\n${result.stderr}`).toBe(0);
    const inScenario = (scenario: string) => [...checks].filter(([id]) => id.startsWith(`${scenario}/`));
    // The scenarios a tools-only gateway must pass in full: everything that needs no fixture tool, prompt or resource.
    for (const scenario of ['tools-list', 'dns-rebinding-protection']) {
      expect(inScenario(scenario).length).toBeGreaterThan(0);
      for (const [id, status] of inScenario(scenario)) expect(`${id}: ${status}`).toBe(`${id}: SUCCESS`);
    }
    expect(checks.get('caching/sep-2549-tools-list-caching-hints')).toBe('SUCCESS');
    expect(checks.get('caching/sep-2549-cache-scope-valid')).toBe('SUCCESS');
    expect(checks.get('caching/sep-2549-ttl-non-negative')).toBe('SUCCESS');
    // server-stateless: only the checks that need the suite's diagnostic fixture tools may miss.
    const stateless = inScenario('server-stateless');
    expect(stateless.filter(([, status]) => status === 'SUCCESS').length).toBeGreaterThanOrEqual(20);
    expect(
      stateless
        .filter(([, status]) => status !== 'SUCCESS' && status !== 'SKIPPED')
        .map(([id]) => id.replace('server-stateless/', ''))
        .sort(),
    ).toEqual([
      'sep-2575-http-server-no-independent-requests-on-stream',
      'sep-2575-missing-capability-http-400',
      'sep-2575-server-no-log-without-loglevel',
      'sep-2575-server-rejects-undeclared-capability',
      'sep-2575-server-sends-tools-list-changed-on-subscription',
    ]);
  });
});
