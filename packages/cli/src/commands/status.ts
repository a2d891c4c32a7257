import type { Command } from 'commander';
import { GatewayError, loadConfig, type LoadedConfig } from '@gateway/core';
import { createVault } from '@gateway/runtime';
import type { AdminStatus } from '@gateway/server';
import { contextFrom, printResult } from '../context.js';

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description("show a running gateway's publications and drift (reads its admin API)")
    .option('--url <url>', 'the gateway base URL (default: gateway.url from the config)')
    .option('--timeout <ms>', 'how long to wait for the gateway', '10000')
    .addHelpText(
      'after',
      '\nThe admin token comes from GATEWAY_ADMIN_TOKEN, else from the vault (admin.tokenSecret, default\n' +
        'admin-token; store one with `gateway secrets set admin-token`).\n' +
        '\nExamples:\n' +
        '  gateway status\n' +
        '  gateway status --url https://gateway.example.com --json',
    )
    .action(async (options: { url?: string; timeout: string }, command: Command) => {
      const context = contextFrom(command);
      let loaded: LoadedConfig | undefined;
      const config = async (): Promise<LoadedConfig> => (loaded ??= await loadConfig(context.configPath));
      const baseUrl = (options.url ?? (await config()).config.gateway.url).replace(/\/+$/, '');
      const token = process.env.GATEWAY_ADMIN_TOKEN || (await tokenFromVault(await config()));
      const status = await readStatus(baseUrl, token, Number(options.timeout) || 10_000);
      printResult(context, describeStatus(baseUrl, status), status);
    });
}

async function tokenFromVault(loaded: LoadedConfig): Promise<string> {
  const name = loaded.config.admin?.tokenSecret ?? 'admin-token';
  const token = await (await createVault(loaded)).get(name);
  if (!token) {
    throw new GatewayError(
      'ADMIN_TOKEN_MISSING',
      `no admin token: set GATEWAY_ADMIN_TOKEN, or store one in the vault with \`gateway secrets set ${name}\``,
      { category: 'auth' },
    );
  }
  return token;
}

async function readStatus(baseUrl: string, token: string, timeoutMs: number): Promise<AdminStatus> {
  let response: Response;
  try {
    response = await fetch(`${baseUrl}/admin/status`, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error', // never carry the admin token to wherever a redirect points
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new GatewayError(
      'GATEWAY_UNREACHABLE',
      `cannot reach the gateway at ${baseUrl}: ${cause?.code ?? cause?.message ?? (error as Error).message}`,
      { category: 'network' },
    );
  }
  const text = await response.text();
  if (!response.ok) {
    let problem: { code?: string; detail?: string } = {};
    try {
      problem = JSON.parse(text) as typeof problem;
    } catch {
      // not problem+json: report the status alone
    }
    throw new GatewayError(
      problem.code ?? 'ADMIN_REQUEST_FAILED',
      `${baseUrl}/admin/status answered ${response.status}${problem.detail ? `: ${problem.detail}` : ''}`,
      { category: response.status === 401 || response.status === 403 ? 'auth' : 'network' },
    );
  }
  try {
    return JSON.parse(text) as AdminStatus;
  } catch {
    throw new GatewayError('ADMIN_REQUEST_FAILED', `${baseUrl}/admin/status did not answer JSON`, { category: 'network' });
  }
}

function table(rows: string[][], indent = '  '): string[] {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows.map((row) => indent + row.map((cell, column) => cell.padEnd(widths[column]!)).join('  ').trimEnd());
}

function describeStatus(baseUrl: string, status: AdminStatus): string[] {
  const lines = [`gateway ${baseUrl}: ${status.ready ? 'ready' : 'not ready (no verified tools.lock loaded)'}`, '', 'publications'];
  if (status.publications.length === 0) lines.push('  none in use');
  else {
    lines.push(
      ...table([
        ['SOURCE', 'PUBLICATION', 'TOOLS', 'BLOCKED'],
        ...status.publications.map((publication) => [
          publication.source,
          publication.id,
          String(publication.toolCount),
          String(publication.blockedCount ?? 0),
        ]),
      ]),
    );
  }
  if (status.lockReload?.status === 'refused') {
    lines.push(
      '',
      `tools.lock: the change at ${status.lockReload.at} was REFUSED; the last good lock keeps serving`,
      `  ${status.lockReload.code}: ${status.lockReload.message}`,
      '  fix it and save again (`gateway verify` shows every problem)',
    );
  } else if (status.lockReload) {
    lines.push('', `tools.lock: last ${status.lockReload.status === 'swapped' ? 'reloaded' : status.lockReload.status} at ${status.lockReload.at}`);
  }
  lines.push('', 'drift');
  if (status.drift.length === 0) lines.push('  not watched');
  for (const source of status.drift) {
    lines.push(`  ${source.source}: ${source.status}${source.checkedAt ? `, checked ${source.checkedAt}` : ', not checked yet'} (${source.document})`);
    if (source.error) lines.push(`    last check failed: ${source.error.code}: ${source.error.message}`);
    for (const blocked of source.blockedTools) lines.push(`    blocked ${blocked.tool}: ${blocked.reason}`);
    if (source.proposal) {
      const list = (names: string[]): string => (names.length ? names.join(', ') : '-');
      lines.push(
        `    proposal ${source.proposal.digest} detected ${source.proposal.detectedAt}`,
        `      changed ${list(source.proposal.changed)}`,
        `      removed ${list(source.proposal.removed)}`,
        `      added   ${list(source.proposal.added)}`,
        `    review it: \`gateway import ${source.source}\`, then review and publish`,
      );
    }
  }
  return lines;
}
