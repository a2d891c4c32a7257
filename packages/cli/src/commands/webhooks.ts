import type { Command } from 'commander';
import {
  GatewayError,
  type AdminWebhookDeliveryList,
  type AdminWebhookEndpointList,
  type AdminWebhookEndpoint,
  type AdminWebhookReplay,
  type AdminWebhookResume,
  type AdminWebhookTest,
} from '@gateway/core';
import { adminClient, withAdminOptions, type AdminClientOptions as AdminOptions } from '../admin-client.js';
import { contextFrom, printResult, table, type CliContext } from '../context.js';

/** One request to the running gateway's admin API (admin-client.ts: the token from GATEWAY_ADMIN_TOKEN or the vault). */
async function adminRequest<T>(
  context: CliContext,
  options: AdminOptions,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<T> {
  return (await adminClient(context, options)).request<T>(method, path.replace(/^\//, ''), body);
}

function parseSequence(value: string, flag: string): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(number) || number < 1) {
    throw new GatewayError('WEBHOOK_REQUEST_INVALID', `${flag} takes a sequence number (1 or more), not '${value}'`);
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
        '  gateway webhooks resume audit\n' +
        '  gateway webhooks test audit',
    );

  withAdminOptions(
    webhooks
      .command('list')
      .description('each endpoint: url, filter, counts, active, paused or disabled')
      .addHelpText('after', '\nExamples:\n  gateway webhooks list'),
  ).action(async (options: AdminOptions, command: Command) => {
    const context = contextFrom(command);
    const result = await adminRequest<AdminWebhookEndpointList>(context, options, 'GET', '/webhooks');
    const lines =
      result.endpoints.length === 0
        ? ['no webhook endpoints configured']
        : table(
            [
              ['ENDPOINT', 'URL', 'OUTCOMES', 'STATE', 'NEXT', 'PENDING', 'DELIVERED', 'FAILED'],
              ...result.endpoints.map((endpoint) => [
                endpoint.name,
                endpoint.url,
                endpoint.outcomes.join(','),
                describeState(endpoint),
                String(endpoint.nextSequence),
                String(endpoint.counts.pending),
                String(endpoint.counts.delivered),
                String(endpoint.counts.failed),
              ]),
            ],
            '',
          );
    printResult(context, lines, result);
  });

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
    const result = await adminRequest<AdminWebhookDeliveryList>(
      context,
      options,
      'GET',
      `/webhooks/${encodeURIComponent(endpoint)}/deliveries?${query}`,
    );
    const lines =
      result.deliveries.length === 0
        ? [`no events for ${endpoint}${options.status ? ` with status ${options.status}` : ''}`]
        : table(
            [
              ['SEQ', 'EVENT', 'STATUS', 'ATTEMPTS', 'LAST', 'WHEN'],
              ...result.deliveries.map((delivery) => [
                String(delivery.sequence),
                delivery.eventId,
                delivery.status,
                String(delivery.attempts),
                delivery.lastError ?? (delivery.lastStatus === null ? '-' : String(delivery.lastStatus)),
                delivery.deliveredAt ?? delivery.nextAttemptAt ?? delivery.lastAttemptAt ?? delivery.createdAt,
              ]),
            ],
            '',
          );
    printResult(context, lines, result);
  });

  registerChanges(webhooks);
}

/** An endpoint's state in one cell of `webhooks list`. */
function describeState(endpoint: AdminWebhookEndpoint): string {
  if (endpoint.paused) return `PAUSED at ${endpoint.paused.sequence ?? '?'} (gateway webhooks resume ${endpoint.name})`;
  if (endpoint.disabled) return 'disabled (410 Gone)';
  return endpoint.rotating ? 'active, rotating secret' : 'active';
}

/** `replay`, `resume` and `test`: what changes delivery (or sends a test event) on one endpoint. */
function registerChanges(webhooks: Command): void {
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
      throw new GatewayError('WEBHOOK_REQUEST_INVALID', 'give exactly one of --failed or --from <sequence>');
    }
    const body = options.failed ? { failed: true } : { from: parseSequence(options.from!, '--from') };
    const result = await adminRequest<AdminWebhookReplay>(
      context,
      options,
      'POST',
      `/webhooks/${encodeURIComponent(endpoint)}/replay`,
      body,
    );
    printResult(
      context,
      `${result.replayed} event${result.replayed === 1 ? '' : 's'} queued again for ${endpoint}, in sequence order`,
      result,
    );
  });

  withAdminOptions(
    webhooks
      .command('resume <endpoint>')
      .description('resume a paused endpoint from the event it stopped at, in order (also ends a 410 Gone disable)')
      .addHelpText(
        'after',
        '\nAn endpoint pauses when an event runs out of attempts (onExhausted: pause, the default): later events\n' +
          'wait and nothing is given up. Resume once the receiver is back; the stopped event gets a fresh cycle of\n' +
          'attempts.\n\nExamples:\n  gateway webhooks resume audit',
      ),
  ).action(async (endpoint: string, options: AdminOptions, command: Command) => {
    const context = contextFrom(command);
    const result = await adminRequest<AdminWebhookResume>(context, options, 'POST', `/webhooks/${encodeURIComponent(endpoint)}/resume`, {});
    const message = result.wasPaused
      ? `${endpoint} resumed: delivery goes on from sequence ${result.pausedSequence}, in order`
      : result.wasDisabled
        ? `${endpoint} re-enabled: delivery goes on from its first pending event, in order`
        : `${endpoint} was not paused: nothing to resume`;
    printResult(context, message, result);
  });

  withAdminOptions(
    webhooks
      .command('test <endpoint>')
      .description('send a signed test event now (outside the ordered stream)')
      .addHelpText('after', '\nExamples:\n  gateway webhooks test audit'),
  ).action(async (endpoint: string, options: AdminOptions, command: Command) => {
    const context = contextFrom(command);
    const result = await adminRequest<AdminWebhookTest>(context, options, 'POST', `/webhooks/${encodeURIComponent(endpoint)}/test`, {});
    if (!result.acknowledged) {
      throw new GatewayError(
        'WEBHOOK_TEST_FAILED',
        `${endpoint} did not acknowledge test event ${result.eventId}: ${result.error ?? `HTTP ${result.status}`}`,
        {
          details: { eventId: result.eventId, status: result.status },
        },
      );
    }
    printResult(context, `${endpoint} acknowledged test event ${result.eventId} (HTTP ${result.status})`, result);
  });
}
