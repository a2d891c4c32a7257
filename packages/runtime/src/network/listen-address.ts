/**
 * The address `gateway serve` listens on, shared by `serve` (which listens there) and `gateway doctor`
 * (which checks that it can): how it is chosen, parsed, and why a listen there fails, in one sentence.
 */
import { createServer } from 'node:net';
import { GatewayError, isLoopbackHostname } from '@gateway/core';

export const DEFAULT_LISTEN = '127.0.0.1:8080';

/**
 * Where to listen when neither --listen nor gateway.listen says: where gateway.url points, when that is a
 * loopback address with an explicit port (`http://127.0.0.1:9000` listens on 127.0.0.1:9000, as a newcomer
 * expects); otherwise 127.0.0.1:8080 (a public URL is usually served through a proxy in front).
 */
export function defaultListen(gatewayUrl: string): string {
  const url = new URL(gatewayUrl);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (url.port === '' || !isLoopbackHostname(host)) return DEFAULT_LISTEN;
  return host.includes(':') ? `[${host}]:${url.port}` : `${host === 'localhost' ? '127.0.0.1' : host}:${url.port}`;
}

/** Parses `host:port`, `[v6]:port` or `:port`. */
export function parseListen(value: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(value.trim());
  const port = match ? Number(match[3]) : Number.NaN;
  if (!match || port > 65535) {
    throw new GatewayError('LISTEN_ADDRESS_INVALID', `not a listen address: '${value}' (expected host:port, e.g. 127.0.0.1:8080)`);
  }
  return { host: match[1] ?? (match[2] || '127.0.0.1'), port };
}

/** `host:port` as people write it (`[v6]:port` for IPv6). */
export function listenAddressText(listen: { host: string; port: number }): string {
  return listen.host.includes(':') ? `[${listen.host}]:${listen.port}` : `${listen.host}:${listen.port}`;
}

/**
 * Why listening on `address` failed, as the end of "cannot listen on <address>: …", for the error codes that
 * mean the address is unavailable (in use, privileged, not this machine's); undefined for any other code.
 */
export function listenAddressProblem(code: string | undefined): string | undefined {
  switch (code) {
    case 'EADDRINUSE':
      return 'the address is already in use (is another gateway running?)';
    case 'EACCES':
      return 'the port needs privileges this process does not have';
    case 'EADDRNOTAVAIL':
      return 'the address is not an address of this machine';
    default:
      return undefined;
  }
}

/** The fix printed after a listen problem. */
export const LISTEN_ADDRESS_FIX = 'stop the other process or choose another address with --listen or gateway.listen';

/**
 * Listens on the address for a moment and closes again: undefined when that works, else the problem (as
 * listenAddressProblem words it, or the system's message for any other failure).
 */
export function probeListenAddress(listen: { host: string; port: number }): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => resolve(listenAddressProblem(error.code) ?? error.message));
    server.listen({ host: listen.host, port: listen.port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}
