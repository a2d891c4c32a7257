import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { GatewayError } from '@gateway/core';
import {
  addressBucket,
  classifyAddress,
  compileAllowList,
  createGuardedAgent,
  guardedFetchText,
  isAddressAllowed,
  isAddressInRanges,
  parseCidr,
} from '../index.js';

describe('isAddressAllowed', () => {
  const refusedWithoutAllowList: Array<[string, string]> = [
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.254', 'private'],
    ['192.168.1.1', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['169.254.1.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['100.64.0.1', 'shared (CGNAT)'],
    ['100.127.255.255', 'shared (CGNAT)'],
    ['169.254.169.254', 'cloud-metadata'],
    ['fd00:ec2::254', 'cloud-metadata'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['192.0.2.10', 'reserved'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'cloud-metadata'],
    ['::ffff:10.1.2.3', 'private'],
    ['64:ff9b::a9fe:a9fe', 'cloud-metadata'],
    ['2002:7f00:1::', 'loopback'],
    ['2001:db8::1', 'reserved'],
  ];
  it.each(refusedWithoutAllowList)('%s is a %s address, refused without an allowlist', (address, category) => {
    expect(classifyAddress(address)).toBe(category);
    expect(isAddressAllowed(address, [])).toBe(false);
  });

  const publicAddresses = [
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.32.0.1',
    '172.15.255.255',
    '100.128.0.1',
    '11.0.0.1',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    '2002:808:808::1',
  ];
  it.each(publicAddresses)('%s is public and allowed without an allowlist', (address) => {
    expect(classifyAddress(address)).toBe('public');
    expect(isAddressAllowed(address)).toBe(true);
  });

  it('an allowlisted range lets exactly its addresses through', () => {
    expect(isAddressAllowed('127.0.0.1', ['127.0.0.1/32'])).toBe(true);
    expect(isAddressAllowed('127.0.0.2', ['127.0.0.1/32'])).toBe(false);
    expect(isAddressAllowed('10.1.2.3', ['10.0.0.0/8'])).toBe(true);
    expect(isAddressAllowed('192.168.1.1', ['10.0.0.0/8'])).toBe(false);
    expect(isAddressAllowed('::1', ['::1/128'])).toBe(true);
    expect(isAddressAllowed('::1', ['127.0.0.1/32'])).toBe(false);
    expect(isAddressAllowed('fd12::5', ['fd12::/16'])).toBe(true);
    expect(isAddressAllowed('127.0.0.1', ['127.0.0.1'])).toBe(true);
  });

  it('an IPv4-mapped IPv6 address is matched against IPv4 allowlist ranges', () => {
    expect(isAddressAllowed('::ffff:127.0.0.1', ['127.0.0.1/32'])).toBe(true);
    expect(isAddressAllowed('::ffff:127.0.0.2', ['127.0.0.1/32'])).toBe(false);
  });

  it('text that is not an IP address is never allowed', () => {
    expect(isAddressAllowed('localhost', ['0.0.0.0/0'])).toBe(false);
    expect(isAddressAllowed('0177.0.0.1')).toBe(false); // octal forms are ambiguous: refused
    expect(isAddressAllowed('')).toBe(false);
  });

  it('an invalid allowlist entry is a configuration error', () => {
    for (const entry of ['127.0.0.1/33', 'not-an-ip/8', '10.0.0.0/8/1', '::1/129']) {
      expect(() => parseCidr(entry)).toThrow(expect.objectContaining({ code: 'NETWORK_ALLOWLIST_INVALID' }));
    }
    expect(() => compileAllowList(['10.0.0.0/8', 'proxy.internal'], 'gateway.trustedProxies')).toThrow(
      "gateway.trustedProxies: 'proxy.internal' is not a CIDR range",
    );
  });

  it('per-address limits count an IPv4 client by its address and an IPv6 client by its /64', () => {
    expect(addressBucket('203.0.113.7')).toBe('203.0.113.7');
    expect(addressBucket('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressBucket('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressBucket('2001:0db8:0001:0002:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64');
    expect(addressBucket('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(addressBucket('::1')).toBe('0:0:0:0::/64');
    expect(addressBucket('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(addressBucket('not-an-address')).toBe('not-an-address');
  });

  it('ranges contain an address whatever its category, also in the IPv4-mapped form of a dual-stack socket', () => {
    const proxies = compileAllowList(['10.0.0.0/8', '203.0.113.5', 'fd00::/8']);
    expect(isAddressInRanges('10.1.2.3', proxies)).toBe(true);
    expect(isAddressInRanges('::ffff:10.1.2.3', proxies)).toBe(true);
    expect(isAddressInRanges('203.0.113.5', proxies)).toBe(true);
    expect(isAddressInRanges('fd12::1', proxies)).toBe(true);
    expect(isAddressInRanges('11.0.0.1', proxies)).toBe(false);
    expect(isAddressInRanges('203.0.113.6', proxies)).toBe(false);
    expect(isAddressInRanges('localhost', compileAllowList(['0.0.0.0/0']))).toBe(false);
    expect(isAddressInRanges('127.0.0.1', compileAllowList([]))).toBe(false);
  });
});

describe('the guarded agent', () => {
  let server: Server;
  let port: number;
  const reached: string[] = [];
  beforeAll(async () => {
    server = createServer((incoming, response) => {
      reached.push(incoming.url ?? '');
      if (incoming.url === '/redirect') {
        response.writeHead(302, { location: `http://127.0.0.1:${port}/doc` }).end();
        return;
      }
      if (incoming.url === '/big') {
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.write('x'.repeat(4096));
        response.end('x'.repeat(4096));
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json', etag: '"v1"' }).end('{"ok":true}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  async function refusal(promise: Promise<unknown>): Promise<GatewayError> {
    const error = await promise.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    let current: unknown = error;
    while (current && !(current instanceof GatewayError)) current = (current as { cause?: unknown }).cause;
    expect(current, `expected a refusal, got ${String(error)}`).toBeInstanceOf(GatewayError);
    return current as GatewayError;
  }

  it('without an allowlist, a loopback server is never reached', async () => {
    const agent = createGuardedAgent({});
    const before = reached.length;
    const error = await refusal(request(`http://127.0.0.1:${port}/secret`, { dispatcher: agent }));
    expect(error.code).toBe('SSRF_ADDRESS_REFUSED');
    expect(error.message).toContain('127.0.0.1');
    expect(error.message).toContain('loopback');
    expect(reached.length).toBe(before);
    await agent.close();
  });

  it('a host name resolving to loopback is refused on the address it resolves to', async () => {
    const agent = createGuardedAgent({});
    const before = reached.length;
    const error = await refusal(request(`http://localhost:${port}/by-name`, { dispatcher: agent }));
    expect(error.code).toBe('SSRF_ADDRESS_REFUSED');
    expect(error.message).toMatch(/localhost at (127\.0\.0\.1|::1)/);
    expect(reached.length).toBe(before);
    await agent.close();
  });

  it('with 127.0.0.1/32 allowed, the loopback server is reached', async () => {
    const agent = createGuardedAgent({ allowPrivateNetworks: ['127.0.0.1/32'] });
    const response = await request(`http://127.0.0.1:${port}/allowed`, { dispatcher: agent });
    expect(response.statusCode).toBe(200);
    expect(await response.body.json()).toEqual({ ok: true });
    expect(reached).toContain('/allowed');
    await agent.close();
  });

  it('with 127.0.0.1/32 allowed, localhost is reached through its IPv4 address only', async () => {
    const agent = createGuardedAgent({ allowPrivateNetworks: ['127.0.0.1/32'] });
    const response = await request(`http://localhost:${port}/localhost-allowed`, { dispatcher: agent });
    expect(response.statusCode).toBe(200);
    await response.body.dump();
    expect(reached).toContain('/localhost-allowed');
    await agent.close();
  });

  it('a metadata address is refused before any packet is sent', async () => {
    const agent = createGuardedAgent({ allowPrivateNetworks: ['127.0.0.1/32'] });
    const error = await refusal(request('http://169.254.169.254/latest/meta-data/', { dispatcher: agent }));
    expect(error.code).toBe('SSRF_ADDRESS_REFUSED');
    expect(error.message).toContain('cloud-metadata');
    await agent.close();
  });

  it('guardedFetchText follows redirects, returns headers and refuses refused hops', async () => {
    const agent = createGuardedAgent({ allowPrivateNetworks: ['127.0.0.1/32'] });
    const fetched = await guardedFetchText(`http://127.0.0.1:${port}/redirect`, { agent, maxBytes: 1024, timeoutMs: 5000 });
    expect(fetched).toMatchObject({ status: 200, text: '{"ok":true}', url: `http://127.0.0.1:${port}/doc` });
    expect(fetched.headers.etag).toBe('"v1"');
    await agent.close();

    const strict = createGuardedAgent({});
    const error = await refusal(guardedFetchText(`http://127.0.0.1:${port}/doc`, { agent: strict, maxBytes: 1024, timeoutMs: 5000 }));
    expect(error.code).toBe('SSRF_ADDRESS_REFUSED');
    await strict.close();
  });

  it('guardedFetchText enforces the size limit while streaming', async () => {
    const agent = createGuardedAgent({ allowPrivateNetworks: ['127.0.0.1/32'] });
    const error = await refusal(guardedFetchText(`http://127.0.0.1:${port}/big`, { agent, maxBytes: 5000, timeoutMs: 5000 }));
    expect(error.code).toBe('FETCH_RESPONSE_TOO_LARGE');
    await agent.close();
  });

  it('guardedFetchText reports an unreachable host as FETCH_FAILED', async () => {
    const agent = createGuardedAgent({ allowPrivateNetworks: ['127.0.0.1/32'] });
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = await refusal(guardedFetchText(`http://127.0.0.1:${closedPort}/`, { agent, maxBytes: 10, timeoutMs: 5000 }));
    expect(error.code).toBe('FETCH_FAILED');
    await agent.close();
  });
});
