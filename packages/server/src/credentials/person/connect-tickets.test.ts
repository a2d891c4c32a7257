import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CONNECT_TICKET_TTL_MS, createConnectTickets } from './connect-tickets.js';

const claims = { person: 'local:alice', login: 'orders/oauth', session: 'session-3' };
const now = 1_800_000_000_000;

describe('connect tickets', () => {
  it('open to the claims they were issued with, until they expire', () => {
    const tickets = createConnectTickets(randomBytes(32));
    const ticket = tickets.issue(claims, now);
    expect(tickets.open(ticket, now + CONNECT_TICKET_TTL_MS - 1)).toMatchObject({ ok: true, claims });
    expect(tickets.open(ticket, now + CONNECT_TICKET_TTL_MS)).toEqual({ ok: false, why: 'expired' });
  });

  it('a changed byte, another key or another format is invalid', () => {
    const tickets = createConnectTickets(randomBytes(32));
    const ticket = tickets.issue(claims, now);
    const [version, payload, tag] = ticket.split('.') as [string, string, string];
    const forgedClaims = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), person: 'local:bob' }));
    expect(tickets.open(`${version}.${forgedClaims.toString('base64url')}.${tag}`, now)).toEqual({ ok: false, why: 'invalid' });
    expect(createConnectTickets(randomBytes(32)).open(ticket, now)).toEqual({ ok: false, why: 'invalid' });
    expect(tickets.open('not-a-ticket', now)).toEqual({ ok: false, why: 'invalid' });
  });

  it('is good for one use', () => {
    const tickets = createConnectTickets(randomBytes(32));
    const ticket = tickets.issue(claims, now);
    const opened = tickets.open(ticket, now);
    if (!opened.ok) throw new Error('expected an open ticket');
    expect(tickets.spend(opened.claims, now)).toBe(true);
    expect(tickets.spend(opened.claims, now)).toBe(false);
    expect(tickets.open(ticket, now)).toEqual({ ok: false, why: 'used' });
    expect(tickets.open(tickets.issue(claims, now), now).ok).toBe(true);
  });
});
