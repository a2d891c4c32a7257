/**
 * What the gateway is started with, read once: gateway.yaml (with `--url`), where it listens and whether over
 * TLS (plain HTTP only on loopback), the logger, and the paths of the lock and the data directory.
 */
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { canonicalMcpUrl, GatewayError, isLoopbackHostname, loadConfig, resolveConfigPath, type LoadedConfig } from '@gateway/core';
import { defaultListen, parseListen } from '@gateway/runtime';
import { createGatewayLogger } from '../logger.js';

export interface GatewaySettings {
  loaded: LoadedConfig;
  lockPath: string;
  listen: ReturnType<typeof parseListen>;
  isLoopbackListener: boolean;
  https: { cert: Buffer; key: Buffer } | undefined;
  logger: Logger;
  mcpUrl: string;
  dataDirectory: string;
}

export interface SettingsOptions {
  configPath: string;
  lockPath?: string;
  listen?: string;
  url?: string;
  logger?: Logger;
  logLevel?: string;
}

export async function readSettings(options: SettingsOptions): Promise<GatewaySettings> {
  const configPath = resolve(options.configPath);
  const lockPath = options.lockPath ? resolve(options.lockPath) : join(dirname(configPath), 'tools.lock');
  const loaded = withUrl(await loadConfig(configPath), options.url);
  const config = loaded.config;
  const listen = parseListen(options.listen ?? config.gateway.listen ?? defaultListen(config.gateway.url));
  const isLoopbackListener = isLoopbackHostname(listen.host);
  const https = await tlsFiles(loaded, listen.host, isLoopbackListener);
  const logger = options.logger ?? createGatewayLogger({ level: options.logLevel });
  // Clients reach a gateway.url that is not this loopback listener: a reverse proxy stands between. Unless it is
  // listed, every request comes from its address, and all people share one per-address allowance.
  const isBehindProxy = isLoopbackListener && !https && !isLoopbackHostname(new URL(config.gateway.url).hostname);
  if (isBehindProxy && (config.gateway.trustedProxies ?? []).length === 0) {
    logger.warn(
      { url: config.gateway.url, listen: `${listen.host}:${listen.port}` },
      'gateway.url is reached through a reverse proxy, which gateway.trustedProxies does not list: every client is counted ' +
        "under the proxy's address by the sign-in, /authorize and registration limits (docs/config.md)",
    );
  }
  return {
    loaded,
    lockPath,
    listen,
    isLoopbackListener,
    https,
    logger,
    mcpUrl: canonicalMcpUrl(config),
    dataDirectory: resolveConfigPath(loaded, config.gateway.dataDirectory ?? '.gateway'),
  };
}

/** Plain HTTP carries bearer tokens in the clear: only on loopback (MCP Authorization › Communication Security). */
async function tlsFiles(loaded: LoadedConfig, host: string, isLoopbackListener: boolean): Promise<GatewaySettings['https']> {
  const tls = loaded.config.gateway.tls;
  if (tls) {
    try {
      return { cert: await readFile(resolveConfigPath(loaded, tls.cert)), key: await readFile(resolveConfigPath(loaded, tls.key)) };
    } catch (error) {
      throw new GatewayError('TLS_FILES_UNREADABLE', `cannot read gateway.tls cert/key: ${(error as Error).message}`);
    }
  }
  if (!isLoopbackListener) {
    throw new GatewayError(
      'LISTEN_INSECURE_REFUSED',
      `refusing to serve plain HTTP on ${host}: set gateway.tls (cert and key) or listen on a loopback address such as 127.0.0.1`,
    );
  }
  return undefined;
}

function withUrl(loaded: LoadedConfig, url: string | undefined): LoadedConfig {
  if (!url) return loaded;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new GatewayError('GATEWAY_URL_INVALID', `--url is not an absolute URL: ${url}`);
  }
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && isLoopbackHostname(parsed.hostname))) {
    throw new GatewayError('GATEWAY_URL_INVALID', `--url must be https (plain http only for loopback hosts): ${url}`);
  }
  return { ...loaded, config: { ...loaded.config, gateway: { ...loaded.config.gateway, url: url.replace(/\/+$/, '') } } };
}
