import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import { rootCertificates } from 'node:tls';
import { Agent, buildConnector } from 'undici';
import { GatewayError } from '@gateway/core';
import { classifyAddress, compileAllowList, isAddressAllowed, type AllowList } from './addresses.js';

export interface GuardedAgentOptions {
  /** CIDR ranges the guard lets through (`network.allowPrivateNetworks`). */
  allowPrivateNetworks?: readonly string[];
  connectTimeoutMs?: number;
  keepAliveTimeoutMs?: number;
  /**
   * Extra PEM certificates trusted besides the system roots (an internal CA; tests). Only trust anchors
   * change: the address checks are the same with or without them.
   */
  ca?: readonly string[];
}

export function ssrfRefusal(host: string, address: string): GatewayError {
  let category: string;
  try {
    category = classifyAddress(address);
  } catch {
    category = 'not an IP address';
  }
  return new GatewayError(
    'SSRF_ADDRESS_REFUSED',
    `refused to connect to ${host} at ${address} (${category} address); ` +
      'list its range in network.allowPrivateNetworks if this gateway is meant to reach it',
    { details: { host, address, addressCategory: category } },
  );
}

/**
 * A DNS lookup that only ever hands `net.connect` addresses the guard allows, so the address checked is
 * the address connected to: a name that resolves to a public address for a first check and to
 * 127.0.0.1 for the connection (DNS rebinding) cannot slip past, because there is no second lookup.
 */
function guardedLookup(allowList: AllowList): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) {
        callback(error, '', 4);
        return;
      }
      const allowed = addresses.filter((entry) => isAddressAllowed(entry.address, allowList));
      if (allowed.length === 0) {
        const first = addresses[0]?.address ?? 'no address';
        callback(ssrfRefusal(hostname, first) as unknown as NodeJS.ErrnoException, '', 4);
        return;
      }
      if (options.all) {
        (callback as unknown as (error: null, addresses: LookupAddress[]) => void)(null, allowed);
      } else {
        callback(null, allowed[0]!.address, allowed[0]!.family);
      }
    });
  };
}

/**
 * An undici Agent for every outbound request the gateway makes (descriptions, upstream APIs, token
 * endpoints). Three checks, all on the connection itself rather than on the URL text:
 * 1. an IP literal host is checked before any packet is sent;
 * 2. a host name is resolved by a lookup that drops refused addresses (net.connect uses only those);
 * 3. after connecting, the socket's remote address is checked again and the socket destroyed on refusal.
 * Redirects are not followed by the agent; each hop is a new connection and passes the same checks.
 */
export function createGuardedAgent(options: GuardedAgentOptions = {}): Agent {
  const allowList = compileAllowList(options.allowPrivateNetworks ?? []);
  const timeout = options.connectTimeoutMs ?? 10_000;
  const tls = options.ca && options.ca.length > 0 ? { ca: [...rootCertificates, ...options.ca] } : {};
  const connectors = new Map<boolean, buildConnector.connector>();
  const connectorFor = (isLiteral: boolean): buildConnector.connector => {
    let connector = connectors.get(isLiteral);
    if (!connector) {
      connector = buildConnector(isLiteral ? { timeout, ...tls } : { timeout, ...tls, lookup: guardedLookup(allowList) });
      connectors.set(isLiteral, connector);
    }
    return connector;
  };
  const connect: buildConnector.connector = (connectOptions, callback) => {
    const host = connectOptions.hostname.replace(/^\[|\]$/g, '');
    const isLiteral = isIP(host) !== 0;
    if (isLiteral && !isAddressAllowed(host, allowList)) {
      callback(ssrfRefusal(host, host), null);
      return;
    }
    connectorFor(isLiteral)(connectOptions, (error, socket) => {
      if (error) {
        callback(unwrapRefusal(error), null);
        return;
      }
      const remote = (socket as Socket).remoteAddress;
      if (remote === undefined || !isAddressAllowed(remote, allowList)) {
        socket!.destroy();
        callback(ssrfRefusal(host, remote ?? 'unknown'), null);
        return;
      }
      callback(null, socket!);
    });
  };
  return new Agent({
    connect,
    ...(options.keepAliveTimeoutMs === undefined ? {} : { keepAliveTimeout: options.keepAliveTimeoutMs }),
  });
}

/** net.connect may wrap lookup errors (e.g. in an AggregateError with autoSelectFamily): keep ours visible. */
function unwrapRefusal(error: Error): Error {
  if (error instanceof GatewayError) return error;
  const nested = (error as AggregateError).errors;
  if (Array.isArray(nested)) {
    const refusal = nested.find((entry) => entry instanceof GatewayError);
    if (refusal) return refusal as GatewayError;
  }
  return error;
}

/** Finds an SSRF refusal in an error chain (undici wraps connector errors in `cause`). */
export function findSsrfRefusal(error: unknown): GatewayError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth += 1) {
    if (current instanceof GatewayError && current.code === 'SSRF_ADDRESS_REFUSED') return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
