/**
 * The CLI's only way into a running gateway: its admin API over HTTP (`/admin/*`, a bearer token). Commands that
 * read or change server state (`status`, `sessions`) go through here, never through the server's code or files.
 */
import type { Command } from 'commander';
import { GatewayError, isErrorCode, loadConfig, type LoadedConfig } from '@gateway/core';
import { createVault } from '@gateway/runtime';
import type { CliContext } from './context.js';

export interface AdminClientOptions {
  url?: string;
  timeout: string;
}

/** The `--url` and `--timeout` options every admin API command takes. */
export function withAdminOptions(command: Command): Command {
  return command
    .option('--url <url>', 'the gateway base URL (default: gateway.url from the config)')
    .option('--timeout <ms>', 'how long to wait for the gateway', '10000');
}

export interface AdminClient {
  readonly baseUrl: string;
  request<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T>;
  /** A GET whose answer is not one JSON document (e.g. the JSON-lines receipt export): the body as text. */
  text(path: string): Promise<string>;
}

/** Resolves the base URL (`--url`, else gateway.url) and the admin token (GATEWAY_ADMIN_TOKEN, else the vault). */
export async function adminClient(context: CliContext, options: AdminClientOptions): Promise<AdminClient> {
  let loaded: LoadedConfig | undefined;
  const config = async (): Promise<LoadedConfig> => (loaded ??= await loadConfig(context.configPath));
  const baseUrl = (options.url ?? (await config()).config.gateway.url).replace(/\/+$/, '');
  const token = process.env.GATEWAY_ADMIN_TOKEN || (await tokenFromVault(await config()));
  const timeoutMs = Number(options.timeout) || 10_000;
  return {
    baseUrl,
    request: async (method, path, body) => parseJson(await send(baseUrl, token, timeoutMs, method, path, body), `${baseUrl}/admin/${path}`),
    text: (path) => send(baseUrl, token, timeoutMs, 'GET', path),
  };
}

async function tokenFromVault(loaded: LoadedConfig): Promise<string> {
  const name = loaded.config.admin?.tokenSecret ?? 'admin-token';
  const token = await (await createVault(loaded)).get(name);
  if (!token) {
    throw new GatewayError(
      'ADMIN_TOKEN_MISSING',
      `no admin token: set GATEWAY_ADMIN_TOKEN, or store one in the vault with \`gateway secrets set ${name}\``,
    );
  }
  return token;
}

async function send(
  baseUrl: string,
  token: string,
  timeoutMs: number,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<string> {
  const url = `${baseUrl}/admin/${path}`;
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error', // never carry the admin token to wherever a redirect points
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new GatewayError(
      'GATEWAY_UNREACHABLE',
      `cannot reach the gateway at ${baseUrl}: ${cause?.code ?? cause?.message ?? (error as Error).message}`,
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
    const message = `${url} answered ${response.status}${problem.detail ? `: ${problem.detail}` : ''}`;
    // The server's own code when it is one of ours (it then carries its category and exit code); else a generic one.
    if (problem.code !== undefined && isErrorCode(problem.code)) throw new GatewayError(problem.code, message);
    throw new GatewayError(response.status === 401 || response.status === 403 ? 'ADMIN_REQUEST_REFUSED' : 'ADMIN_REQUEST_FAILED', message);
  }
  return text;
}

function parseJson<T>(text: string, url: string): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new GatewayError('ADMIN_REQUEST_FAILED', `${url} did not answer JSON`);
  }
}
