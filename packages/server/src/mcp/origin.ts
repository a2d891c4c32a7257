import { isLoopbackHostname } from '@gateway/core';

export interface RequestOriginPolicy {
  /** The canonical `/mcp` URL (gateway.url + `/mcp`). */
  mcpUrl: string;
  /** True when the server listens on a loopback address: loopback spellings of the host are then allowed. */
  isLoopbackListener: boolean;
  /** The port actually listened on (loopback spellings use it). */
  listenPort?: number;
  /** Extra origins from `gateway.allowedOrigins` (full origins, e.g. `https://app.example.com`). */
  allowedOrigins?: readonly string[];
}

export interface OriginGuard {
  /** Null when the Host header names this gateway, else the reason to refuse. */
  checkHost(host: string | undefined): string | null;
  /** Null when there is no Origin or it is allowed, else the reason to refuse (MCP: a present invalid Origin → 403). */
  checkOrigin(origin: string | undefined): string | null;
}

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];

/**
 * DNS-rebinding protection (MCP 2026-07-28 Streamable HTTP › Security; MCP 2025-11-25 Security Best
 * Practices): a page on another site that rebinds its name to this gateway's address still sends its own
 * name in `Host` and its own origin in `Origin`; both are compared with the canonical URL (and the
 * loopback spellings of it when the gateway listens on loopback).
 */
export function createOriginGuard(policy: RequestOriginPolicy): OriginGuard {
  const canonical = new URL(policy.mcpUrl);
  const defaultPort = canonical.protocol === 'https:' ? '443' : '80';
  const hosts = new Set<string>([canonical.host.toLowerCase()]);
  const origins = new Set<string>([canonical.origin.toLowerCase()]);
  if (policy.isLoopbackListener || isLoopbackHostname(canonical.hostname)) {
    const ports = new Set<string>([canonical.port || defaultPort]);
    if (policy.listenPort !== undefined) ports.add(String(policy.listenPort));
    for (const name of LOOPBACK_NAMES) {
      for (const port of ports) {
        const isDefault = port === defaultPort;
        hosts.add(isDefault ? name : `${name}:${port}`);
        for (const scheme of ['http:', 'https:']) {
          const schemeDefault = scheme === 'https:' ? '443' : '80';
          origins.add(port === schemeDefault ? `${scheme}//${name}` : `${scheme}//${name}:${port}`);
        }
      }
    }
  }
  for (const origin of policy.allowedOrigins ?? []) {
    try {
      origins.add(new URL(origin).origin.toLowerCase());
    } catch {
      origins.add(origin.toLowerCase());
    }
  }

  return {
    checkHost(host) {
      if (!host) return 'the Host header is missing';
      const normalised = host.trim().toLowerCase();
      // `host:443` on https (or `:80` on http) names the same authority as the bare host.
      const withoutDefaultPort = normalised.endsWith(`:${defaultPort}`) ? normalised.slice(0, -defaultPort.length - 1) : normalised;
      if (hosts.has(normalised) || hosts.has(withoutDefaultPort)) return null;
      return `the Host header '${host}' does not name this gateway (${canonical.host})`;
    },
    checkOrigin(origin) {
      if (origin === undefined || origin === '') return null;
      let parsed: string;
      try {
        parsed = new URL(origin).origin.toLowerCase();
      } catch {
        return `the Origin header '${origin}' is not a valid origin`;
      }
      // The opaque origin `null` parses to the string "null": never allowed.
      if (parsed === 'null' || !origins.has(parsed)) return `the Origin '${origin}' is not allowed to call this gateway`;
      return null;
    },
  };
}
