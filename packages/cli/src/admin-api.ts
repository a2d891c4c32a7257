import { GatewayError, loadConfig, type LoadedConfig } from '@gateway/core';
import { createVault } from '@gateway/runtime';
import type { CliContext } from './context.js';

/** Where and how the CLI reaches a running gateway's admin API (`--url`, `--timeout`, the admin token). */
export interface AdminTarget {
  baseUrl: string;
  token: string;
  timeoutMs: number;
}

/**
 * The admin target from the command's options: the base URL from `--url` or gateway.url, the token from
 * GATEWAY_ADMIN_TOKEN or else the vault (admin.tokenSecret, default admin-token).
 */
export async function adminTarget(context: CliContext, options: { url?: string; timeout?: string }): Promise<AdminTarget> {
  let loaded: LoadedConfig | undefined;
  const config = async (): Promise<LoadedConfig> => (loaded ??= await loadConfig(context.configPath));
  const baseUrl = (options.url ?? (await config()).config.gateway.url).replace(/\/+$/, '');
  const token = process.env.GATEWAY_ADMIN_TOKEN || (await tokenFromVault(await config()));
  return { baseUrl, token, timeoutMs: Number(options.timeout) || 10_000 };
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

/** One admin API request; problem+json answers become GatewayErrors with the server's code. */
export async function adminRequest<T>(target: AdminTarget, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  const url = `${target.baseUrl}/admin${path}`;
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers: {
        authorization: `Bearer ${target.token}`,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(target.timeoutMs),
      redirect: 'error', // never carry the admin token to wherever a redirect points
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new GatewayError(
      'GATEWAY_UNREACHABLE',
      `cannot reach the gateway at ${target.baseUrl}: ${cause?.code ?? cause?.message ?? (error as Error).message}`,
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
      `${url} answered ${response.status}${problem.detail ? `: ${problem.detail}` : ''}`,
      { category: response.status === 401 || response.status === 403 ? 'auth' : response.status === 404 ? 'usage' : 'network' },
    );
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new GatewayError('ADMIN_REQUEST_FAILED', `${url} did not answer JSON`, { category: 'network' });
  }
}
