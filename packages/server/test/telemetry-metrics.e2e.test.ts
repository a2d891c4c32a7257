/**
 * Prometheus metrics end to end: Debian's `prometheus` scrapes a gateway on loopback with the admin token (its
 * `authorization.credentials_file`), and its HTTP API counts exactly the calls made; `/metrics` refuses a request
 * without the token; `telemetry.metrics.listen` serves them on a listener of their own instead.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { repositoryRoot, temporaryDirectory } from '../../../test-support/cli.js';
import { HARNESS_ADMIN_TOKEN, startHarness, type Harness } from './support/harness.js';
import { freePort } from './support/net.js';

const PROMETHEUS = '/usr/bin/prometheus';
const CALLS = 7;

async function callTools(mcpUrl: string, calls: Array<{ name: string; arguments: Record<string, unknown> }>): Promise<void> {
  const client = new Client({ name: 'metrics-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { authorization: 'Bearer t' } } }));
  try {
    for (const call of calls) await client.callTool(call).catch(() => undefined);
  } finally {
    await client.close();
  }
}

/** The value of a one-series instant query, or undefined while Prometheus has none. */
async function queryValue(prometheusUrl: string, query: string): Promise<number | undefined> {
  const response = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(query)}`);
  if (!response.ok) return undefined;
  const answer = (await response.json()) as { data: { result: Array<{ value: [number, string] }> } };
  const value = answer.data.result[0]?.value[1];
  return value === undefined ? undefined : Number(value);
}

describe('Prometheus scraping /metrics with the admin token', () => {
  let harness: Harness;
  let prometheus: ChildProcess | undefined;
  let prometheusUrl: string;
  let folder: Awaited<ReturnType<typeof temporaryDirectory>>;
  let prometheusLog = '';

  beforeAll(async () => {
    expect(existsSync(PROMETHEUS), `${PROMETHEUS} is missing: apt-get install -y prometheus`).toBe(true);
    harness = await startHarness();
    folder = await temporaryDirectory('gateway-prometheus-');
    const tokenFile = join(folder.path, 'admin-token');
    await writeFile(tokenFile, HARNESS_ADMIN_TOKEN, { mode: 0o600 });
    const configFile = join(folder.path, 'prometheus.yml');
    await writeFile(
      configFile,
      [
        'global:',
        '  scrape_interval: 1s',
        'scrape_configs:',
        '  - job_name: gateway',
        '    scrape_interval: 500ms',
        '    scrape_timeout: 400ms',
        `    static_configs: [{ targets: ['127.0.0.1:${harness.port}'] }]`,
        `    authorization: { credentials_file: ${tokenFile} }`,
        '',
      ].join('\n'),
    );
    const port = await freePort();
    prometheusUrl = `http://127.0.0.1:${port}`;
    prometheus = spawn(
      PROMETHEUS,
      [
        `--config.file=${configFile}`,
        `--storage.tsdb.path=${join(folder.path, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    prometheus.stderr?.on('data', (chunk: Buffer) => {
      prometheusLog += chunk.toString();
    });
  });

  afterAll(async () => {
    if (prometheus && prometheus.exitCode === null) {
      const exited = new Promise((resolve) => prometheus!.once('exit', resolve));
      prometheus.kill('SIGTERM');
      await exited;
    }
    await harness?.stop();
    await folder?.cleanup();
  });

  it('counts in gateway_tool_calls_total exactly the calls made, as Prometheus reads it through its HTTP API', async () => {
    await callTools(
      harness.mcpUrl,
      Array.from({ length: CALLS }, (_unused, index) => ({ name: 'get_order', arguments: { orderId: `ord_${1001 + (index % 2)}` } })),
    );
    await callTools(harness.mcpUrl, [{ name: 'no_such_tool', arguments: {} }]);
    const query = 'sum(gateway_tool_calls_total{job="gateway",source="orders",tool="get_order",outcome="allowed"})';
    const deadline = Date.now() + 30_000;
    let value: number | undefined;
    while (Date.now() < deadline) {
      value = await queryValue(prometheusUrl, query).catch(() => undefined);
      if (value === CALLS) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(value, `prometheus said: ${prometheusLog}`).toBe(CALLS);
    // A tool the snapshot does not know is one bounded label, never the name the client sent.
    expect(await queryValue(prometheusUrl, 'sum(gateway_tool_call_denials_total{reason="TOOL_UNKNOWN"})')).toBe(1);
    expect(await queryValue(prometheusUrl, 'count(gateway_tool_calls_total{tool="no_such_tool"})')).toBeUndefined();
    expect(await queryValue(prometheusUrl, 'sum(gateway_tool_call_upstream_duration_seconds_count{source="orders"})')).toBe(CALLS);
    expect(await queryValue(prometheusUrl, 'up{job="gateway"}')).toBe(1);
  });

  it("names each call's receipt in its log line, refusals included; no trace id while traces are off", async () => {
    const lines = harness.logs.map((line) => JSON.parse(line) as Record<string, unknown>);
    const calls = lines.filter((line) => line.msg === 'tool call' && line.tool === 'get_order');
    expect(calls).toHaveLength(CALLS);
    for (const line of calls) {
      expect(line.receipt).toMatch(/^receipt-\d+$/);
      expect(line).not.toHaveProperty('traceId');
    }
    expect(new Set(calls.map((line) => line.receipt)).size).toBe(CALLS);
    const refused = lines.find((line) => line.msg === 'tool call refused' && line.tool === 'no_such_tool');
    expect(refused).toMatchObject({ outcome: 'denied', reason: 'TOOL_UNKNOWN', receipt: expect.stringMatching(/^receipt-\d+$/) });
  });

  it('refuses /metrics without the admin token, or with a wrong one', async () => {
    const url = `http://127.0.0.1:${harness.port}/metrics`;
    const without = await fetch(url);
    expect(without.status).toBe(401);
    expect(without.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(((await without.json()) as { code: string }).code).toBe('ADMIN_TOKEN_INVALID');
    expect((await fetch(url, { headers: { authorization: 'Bearer wrong-token' } })).status).toBe(401);
    const allowed = await fetch(url, { headers: { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` } });
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await allowed.text();
    expect(text).toContain('# TYPE gateway_tool_calls_total counter');
    // The wrong tokens above are counted as failed sign-ins of their kind.
    expect(text).toMatch(/^gateway_signin_failures_total\{kind="admin_token"\} [1-9]/m);
  });

  it('examples/observability: the alerting rules load in promtool; the rules and dashboard name only served metrics', async () => {
    const folder = join(repositoryRoot, 'examples', 'observability');
    const checked = await promisify(execFile)('/usr/bin/promtool', ['check', 'rules', join(folder, 'alerts.yml')]);
    expect(checked.stdout).toMatch(/SUCCESS: \d+ rules found/);
    const served = await (
      await fetch(`http://127.0.0.1:${harness.port}/metrics`, { headers: { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` } })
    ).text();
    const types = new Set([...served.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]));
    const named = (text: string) => [...text.matchAll(/\bgateway_[a-z_]+\b/g)].map((match) => match[0].replace(/_(bucket|count|sum)$/, ''));
    const rules = named(await readFile(join(folder, 'alerts.yml'), 'utf8'));
    const dashboard = JSON.parse(await readFile(join(folder, 'grafana-dashboard.json'), 'utf8')) as {
      panels: Array<{ targets?: Array<{ expr: string }> }>;
    };
    const queried = named(
      dashboard.panels
        .flatMap((panel) => panel.targets ?? [])
        .map((target) => target.expr)
        .join('\n'),
    );
    expect(rules.length).toBeGreaterThan(0);
    expect(queried.length).toBeGreaterThan(10);
    expect([...new Set([...rules, ...queried])].filter((name) => !types.has(name))).toEqual([]);
  });
});

describe('telemetry.metrics.listen', () => {
  let harness: Harness;
  let metricsPort: number;

  beforeAll(async () => {
    metricsPort = await freePort();
    harness = await startHarness({ configExtra: ['telemetry:', '  metrics:', `    listen: 127.0.0.1:${metricsPort}`].join('\n') });
  });

  afterAll(async () => {
    await harness?.stop();
  });

  it('serves /metrics on its own listener without a token, and not on the gateway listener', async () => {
    await callTools(harness.mcpUrl, [{ name: 'get_order', arguments: { orderId: 'ord_1001' } }]);
    const own = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(own.status).toBe(200);
    expect(await own.text()).toMatch(/^gateway_tool_calls_total\{source="orders",tool="get_order",outcome="allowed"\} 1$/m);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/admin/status`)).status).toBe(404);
    const main = await fetch(`http://127.0.0.1:${harness.port}/metrics`, { headers: { authorization: `Bearer ${HARNESS_ADMIN_TOKEN}` } });
    expect(main.status).toBe(404);
  });
});
