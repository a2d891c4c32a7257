import type { Command } from 'commander';
import { GatewayError, loadConfig, type LoadedConfig } from '@gateway/core';
import { createVault } from '@gateway/runtime';
import { contextFrom, printResult, type CliContext } from '../context.js';

interface AdminOptions {
  url?: string;
  timeout: string;
}

/** What `GET /admin/webhooks` answers (packages/server/src/webhooks/admin-routes.ts). */
interface EndpointSummary {
  name: string;
  url: string;
  outcomes: string[];
  rotating: boolean;
  disabled: { at: string; reason: string | null } | null;
  nextSequence: number;
  counts: { pending: number; delivered: number; failed: number };
  lease: { holder: string; expiresAt: string } | null;
}

interface Delivery {
  sequence: number;
  eventId: string;
  receiptId: string | null;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  lastAttemptAt: string | null;
  nextAttemptAt: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

/** One request to the running gateway's admin API (the token from GATEWAY_ADMIN_TOKEN or the vault). */
async function adminRequest<T>(context: CliContext, options: AdminOptions, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  let loaded: LoadedConfig | undefined;
  const config = async (): Promise<LoadedConfig> => (loaded ??= await loadConfig(context.configPath));
  const baseUrl = (options.url ?? (await config()).config.gateway.url).replace(/\/+$/, '');
  let token = process.env.GATEWAY_ADMIN_TOKEN;
  if (!token) {
    const name = (await config()).config.admin?.tokenSecret ?? 'admin-token';
    token = await (await createVault(await config())).get(name);
    if (!token) {
      throw new GatewayError('ADMIN_TOKEN_MISSING', `no admin token: set GATEWAY_ADMIN_TOKEN, or store one in the vault with \`gateway secrets set ${name}\``, {
        category: 'auth',
      });
    }
  }
  let response: Response;
  try {
    response = await fetch(`${baseUrl}/admin${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      // A test event waits for the receiver: allow its timeout on top of ours.
      signal: AbortSignal.timeout(Number(options.timeout) || 30_000),
      redirect: 'error', // never carry the admin token to wherever a redirect points
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new GatewayError('GATEWAY_UNREACHABLE', `cannot reach the gateway at ${baseUrl}: ${cause?.code ?? cause?.message ?? (error as Error).message}`, {
      category: 'network',
    });
  }
  const text = await response.text();
  if (!response.ok) {
    let problem: { code?: string; detail?: string } = {};
    try {
      problem = JSON.parse(text) as typeof problem;
    } catch {
      // not problem+json: report the status alone
    }
    const category = response.status === 401 || response.status === 403 ? 'auth' : response.status === 404 || response.status === 400 ? 'usage' : 'network';
    throw new GatewayError(problem.code ?? 'ADMIN_REQUEST_FAILED', `${baseUrl}/admin${path} answered ${response.status}${problem.detail ? `: ${problem.detail}` : ''}`, { category });
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new GatewayError('ADMIN_REQUEST_FAILED', 'the admin API did not answer JSON', { category: 'network' });
  }
}

function withAdminOptions(command: Command): Command {
  return command
    .option('--url <url>', 'the gateway base URL (default: gateway.url from the config)')
    .option('--timeout <ms>', 'how long to wait for the gateway', '30000');
}

function table(rows: string[][], indent = '  '): string[] {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows.map((row) => indent + row.map((cell, column) => cell.padEnd(widths[column]!)).join('  ').trimEnd());
}

function parseSequence(value: string, flag: string): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(number) || number < 1) {
    throw new GatewayError('WEBHOOK_REQUEST_INVALID', `${flag} takes a sequence number (1 or more), not '${value}'`, { category: 'usage' });
  }
  return number;
}

export function registerWebhooks(program: Command): void {
  const webhooks = program
    .command('webhooks')
    .description("a running gateway's webhook endpoints and deliveries (reads its admin API)")
    .addHelpText(
      'after',
      '\nEndpoints are configured under `webhooks:` in gateway.yaml (docs/webhooks.md). The admin token comes\n' +
        'from GATEWAY_ADMIN_TOKEN, else from the vault (admin.tokenSecret, default admin-token).\n' +
        '\nExamples:\n' +
        '  gateway webhooks list\n' +
        '  gateway webhooks deliveries audit --status failed\n' +
        '  gateway webhooks replay audit --failed\n' +
        '  gateway webhooks replay audit --from 120\n' +
        '  gateway webhooks test audit',
    );

  withAdminOptions(webhooks.command('list').description('each endpoint: url, filter, counts, disabled or not')
    .addHelpText('after', '\nExamples:\n  gateway webhooks list')).action(
    async (options: AdminOptions, command: Command) => {
      const context = contextFrom(command);
      const result = await adminRequest<{ endpoints: EndpointSummary[] }>(context, options, 'GET', '/webhooks');
      const lines =
        result.endpoints.length === 0
          ? ['no webhook endpoints configured']
          : table([
              ['ENDPOINT', 'URL', 'OUTCOMES', 'STATE', 'NEXT', 'PENDING', 'DELIVERED', 'FAILED'],
              ...result.endpoints.map((endpoint) => [
                endpoint.name,
                endpoint.url,
                endpoint.outcomes.join(','),
                endpoint.disabled ? 'disabled (410 Gone)' : endpoint.rotating ? 'active, rotating secret' : 'active',
                String(endpoint.nextSequence),
                String(endpoint.counts.pending),
                String(endpoint.counts.delivered),
                String(endpoint.counts.failed),
              ]),
            ], '');
      printResult(context, lines, result);
    },
  );

  withAdminOptions(
    webhooks
      .command('deliveries <endpoint>')
      .description("an endpoint's events in sequence order, with their delivery state")
    .addHelpText('after', '\nExamples:\n  gateway webhooks deliveries audit\n  gateway webhooks deliveries audit --json')
      .option('--status <status>', 'only pending, delivered or failed')
      .option('--from <sequence>', 'start at this sequence number')
      .option('--limit <n>', 'at most this many (1-1000)', '100'),
  ).action(async (endpoint: string, options: AdminOptions & { status?: string; from?: string; limit: string }, command: Command) => {
    const context = contextFrom(command);
    const query = new URLSearchParams({ limit: options.limit });
    if (options.status) query.set('status', options.status);
    if (options.from) query.set('from', String(parseSequence(options.from, '--from')));
    const result = await adminRequest<{ endpoint: string; deliveries: Delivery[] }>(
      context,
      options,
      'GET',
      `/webhooks/${encodeURIComponent(endpoint)}/deliveries?${query}`,
    );
    const lines =
      result.deliveries.length === 0
        ? [`no events for ${endpoint}${options.status ? ` with status ${options.status}` : ''}`]
        : table([
            ['SEQ', 'EVENT', 'STATUS', 'ATTEMPTS', 'LAST', 'WHEN'],
            ...result.deliveries.map((delivery) => [
              String(delivery.sequence),
              delivery.eventId,
              delivery.status,
              String(delivery.attempts),
              delivery.lastError ?? (delivery.lastStatus === null ? '-' : String(delivery.lastStatus)),
              delivery.deliveredAt ?? delivery.nextAttemptAt ?? delivery.lastAttemptAt ?? delivery.createdAt,
            ]),
          ], '');
    printResult(context, lines, result);
  });

  withAdminOptions(
    webhooks
      .command('replay <endpoint>')
      .description('send events again, in sequence order, under their original ids (re-enables a disabled endpoint)')
    .addHelpText('after', '\nExamples:\n  gateway webhooks replay audit --failed\n  gateway webhooks replay audit --from 120')
      .option('--failed', 'the events given up after the last attempt')
      .option('--from <sequence>', 'every event from this sequence number on, delivered or not'),
  ).action(async (endpoint: string, options: AdminOptions & { failed?: boolean; from?: string }, command: Command) => {
    const context = contextFrom(command);
    if (Boolean(options.failed) === (options.from !== undefined)) {
      throw new GatewayError('WEBHOOK_REQUEST_INVALID', 'give exactly one of --failed or --from <sequence>', { category: 'usage' });
    }
    const body = options.failed ? { failed: true } : { from: parseSequence(options.from!, '--from') };
    const result = await adminRequest<{ endpoint: string; replayed: number }>(
      context,
      options,
      'POST',
      `/webhooks/${encodeURIComponent(endpoint)}/replay`,
      body,
    );
    printResult(context, `${result.replayed} event${result.replayed === 1 ? '' : 's'} queued again for ${endpoint}, in sequence order`, result);
  });

  withAdminOptions(webhooks.command('test <endpoint>').description('send a signed test event now (outside the ordered stream)')
    .addHelpText('after', '\nExamples:\n  gateway webhooks test audit')).action(
    async (endpoint: string, options: AdminOptions, command: Command) => {
      const context = contextFrom(command);
      const result = await adminRequest<{ endpoint: string; eventId: string; status: number | null; error: string | null; acknowledged: boolean }>(
        context,
        options,
        'POST',
        `/webhooks/${encodeURIComponent(endpoint)}/test`,
        {},
      );
      if (!result.acknowledged) {
        throw new GatewayError('WEBHOOK_TEST_FAILED', `${endpoint} did not acknowledge test event ${result.eventId}: ${result.error ?? `HTTP ${result.status}`}`, {
          category: 'network',
          details: { eventId: result.eventId, status: result.status },
        });
      }
      printResult(context, `${endpoint} acknowledged test event ${result.eventId} (HTTP ${result.status})`, result);
    },
  );
}
