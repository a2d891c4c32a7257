import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MemoryEphemeralState } from '../../store/memory/ephemeral-state.js';
import { CONNECT_TICKET_TTL_MS, createConnectTickets } from './connect-tickets.js';

const claims = { person: 'local:alice', login: 'orders/oauth', session: 'session-3' };
const now = 1_800_000_000_000;

describe('connect tickets', () => {
  it('open to the claims they were issued with, until they expire', async () => {
    const tickets = createConnectTickets(randomBytes(32), new MemoryEphemeralState());
    const ticket = tickets.issue(claims, now);
    expect(await tickets.open(ticket, now + CONNECT_TICKET_TTL_MS - 1)).toMatchObject({ ok: true, claims });
    expect(await tickets.open(ticket, now + CONNECT_TICKET_TTL_MS)).toEqual({ ok: false, why: 'expired' });
  });

  it('a changed byte, another key or another format is invalid', async () => {
    const tickets = createConnectTickets(randomBytes(32), new MemoryEphemeralState());
    const ticket = tickets.issue(claims, now);
    const [version, payload, tag] = ticket.split('.') as [string, string, string];
    const forgedClaims = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), person: 'local:bob' }));
    expect(await tickets.open(`${version}.${forgedClaims.toString('base64url')}.${tag}`, now)).toEqual({ ok: false, why: 'invalid' });
    expect(await createConnectTickets(randomBytes(32), new MemoryEphemeralState()).open(ticket, now)).toEqual({
      ok: false,
      why: 'invalid',
    });
    expect(await tickets.open('not-a-ticket', now)).toEqual({ ok: false, why: 'invalid' });
  });

  it('is good for one use', async () => {
    const tickets = createConnectTickets(randomBytes(32), new MemoryEphemeralState());
    const ticket = tickets.issue(claims, now);
    const opened = await tickets.open(ticket, now);
    if (!opened.ok) throw new Error('expected an open ticket');
    expect(await tickets.spend(opened.claims, now)).toBe(true);
    expect(await tickets.spend(opened.claims, now)).toBe(false);
    expect(await tickets.open(ticket, now)).toEqual({ ok: false, why: 'used' });
    expect((await tickets.open(tickets.issue(claims, now), now)).ok).toBe(true);
  });
});
