import { describe, expect, it } from 'vitest';
import { parseConfig } from '@gateway/core';
import { createVault } from '@gateway/runtime';
import { endpointSecrets } from './secrets.js';

const current = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
const previous = `whsec_${Buffer.alloc(32, 2).toString('base64')}`;

async function secretsFor(endpointYaml: string, env: Record<string, string>, now = Date.parse('2026-11-22T12:00:00Z')) {
  const loaded = parseConfig(
    `gateway:\n  url: http://127.0.0.1:8080\nsources: {}\nvault:\n  provider: env\nwebhooks:\n  audit:\n${endpointYaml}`,
    '/tmp/gateway.yaml',
  );
  const vault = await createVault(loaded, { env });
  return endpointSecrets(vault, 'audit', loaded.config.webhooks!.audit!, now);
}

describe('webhook signing secrets', () => {
  const endpoint = '    url: https://siem.example.com/hook\n    secret: hook-new\n    previousSecret: hook-old\n';
  const env = { GATEWAY_SECRET_HOOK_NEW: current, GATEWAY_SECRET_HOOK_OLD: previous };

  it('during a rotation both secrets sign, the current one first', async () => {
    expect(await secretsFor(endpoint, env)).toEqual([current, previous]);
  });

  it('previousSecretUntil ends the overlap at a fixed time', async () => {
    const until = `${endpoint}    previousSecretUntil: 2026-11-22T11:00:00Z\n`;
    expect(await secretsFor(until, env)).toEqual([current]);
    expect(await secretsFor(until, env, Date.parse('2026-11-22T10:59:59Z'))).toEqual([current, previous]);
  });

  it('a missing or malformed secret is named by key and vault name, never by value', async () => {
    await expect(secretsFor(endpoint, { GATEWAY_SECRET_HOOK_NEW: current })).rejects.toMatchObject({
      code: 'WEBHOOK_SECRET_MISSING',
      message: expect.stringContaining('webhooks.audit.previousSecret'),
    });
    const malformed = 'whsec_***not base64***';
    const error = (await secretsFor(endpoint, { ...env, GATEWAY_SECRET_HOOK_NEW: malformed }).catch(
      (caught: unknown) => caught,
    )) as Error & { code: string };
    expect(error.code).toBe('WEBHOOK_SECRET_INVALID');
    expect(error.message).toContain("'hook-new'");
    expect(error.message).not.toContain(malformed);
  });
});
