import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Leases } from '../leases.js';
import type { UnitOfWork } from '../unit-of-work.js';

/**
 * What the leases suite runs against: two handles on one fresh, empty backing database (as two processes see it),
 * and how to dispose of them. A PostgreSQL adapter passes a factory of its own; the suite does not change.
 */
export interface LeasesUnderTest {
  /** Two connections to the same database. */
  first: Leases;
  second: Leases;
  /** Units of work on `first`'s connection (what `isHeld` reads in). */
  unitOfWork: UnitOfWork;
  close(): Promise<void>;
}

export type LeasesFactory = () => Promise<LeasesUnderTest>;

const NAME = 'drift-leader';
const MINUTE_MS = 60_000;

/** The rules of the `Leases` port (../leases.ts), for any adapter. */
export function leasesContract(adapter: string, factory: LeasesFactory): void {
  describe(`Leases (${adapter})`, () => {
    let underTest: LeasesUnderTest;
    let first: Leases;
    let second: Leases;
    beforeEach(async () => {
      underTest = await factory();
      ({ first, second } = underTest);
    });
    afterEach(() => underTest.close());

    it('a free lease is taken; while it is held another holder cannot take it, through any connection', async () => {
      const now = Date.now();
      const lease = await first.take(NAME, 'a', MINUTE_MS, now);
      expect(lease).toEqual({ name: NAME, holder: 'a', token: expect.any(Number), expiresAt: now + MINUTE_MS });
      expect(await second.take(NAME, 'b', MINUTE_MS, now + 1)).toBeUndefined();
      expect(await first.take(NAME, 'b', MINUTE_MS, now + 1)).toBeUndefined();
      expect(await second.holder(NAME, now + 1)).toEqual(lease);
      // Names are independent.
      expect(await second.take('checkpoint-signer', 'b', MINUTE_MS, now)).toMatchObject({ holder: 'b' });
    });

    it('the holder taking it again keeps its token and moves the expiry', async () => {
      const now = Date.now();
      const lease = (await first.take(NAME, 'a', MINUTE_MS, now))!;
      expect(await second.take(NAME, 'a', MINUTE_MS, now + 10)).toEqual({ ...lease, expiresAt: now + 10 + MINUTE_MS });
    });

    it('an expired lease goes to the next holder with a greater token', async () => {
      const now = Date.now();
      const lease = (await first.take(NAME, 'a', 1000, now))!;
      expect(await second.take(NAME, 'b', 1000, now + 999)).toBeUndefined();
      const next = (await second.take(NAME, 'b', 1000, now + 1000))!;
      expect(next).toMatchObject({ holder: 'b', expiresAt: now + 2000 });
      expect(next.token).toBeGreaterThan(lease.token);
      expect(await first.holder(NAME, now + 1000)).toEqual(next);
    });

    it('renewing extends the lease while held, even past its expiry if nobody took it; once taken, renewing fails', async () => {
      const now = Date.now();
      const lease = (await first.take(NAME, 'a', 1000, now))!;
      expect(await first.renew(NAME, 'a', lease.token, 1000, now + 500)).toEqual({ ...lease, expiresAt: now + 1500 });
      expect(await second.take(NAME, 'b', 1000, now + 1400)).toBeUndefined();
      expect(await first.renew(NAME, 'a', lease.token, 1000, now + 1600)).toEqual({ ...lease, expiresAt: now + 2600 });
      const taken = (await second.take(NAME, 'b', 1000, now + 2600))!;
      expect(await first.renew(NAME, 'a', lease.token, 1000, now + 2700)).toBeUndefined();
      expect(await second.holder(NAME, now + 2700)).toEqual(taken);
      // A renewal names the holder and its token: neither another holder nor a stale token extends it.
      expect(await first.renew(NAME, 'a', taken.token, 1000, now + 2700)).toBeUndefined();
      expect(await first.renew(NAME, 'b', lease.token, 1000, now + 2700)).toBeUndefined();
      expect(await first.renew('never-taken', 'a', 1, 1000, now)).toBeUndefined();
    });

    it('a released lease is free at once for another holder, whose token is still greater', async () => {
      const now = Date.now();
      const lease = (await first.take(NAME, 'a', MINUTE_MS, now))!;
      expect(await second.release(NAME, 'b', lease.token)).toBe(false);
      expect(await second.release(NAME, 'a', lease.token + 1)).toBe(false);
      expect(await first.release(NAME, 'a', lease.token)).toBe(true);
      expect(await first.release(NAME, 'a', lease.token)).toBe(false);
      expect(await second.holder(NAME, now + 1)).toBeUndefined();
      expect(await first.renew(NAME, 'a', lease.token, MINUTE_MS, now + 1)).toBeUndefined();
      const next = (await second.take(NAME, 'b', MINUTE_MS, now + 1))!;
      expect(next.token).toBeGreaterThan(lease.token);
      // The first holder coming back is a new holder too.
      await second.release(NAME, 'b', next.token);
      expect((await first.take(NAME, 'a', MINUTE_MS, now + 2))!.token).toBeGreaterThan(next.token);
    });

    it('a fenced write sees, in its unit of work, whether the holder still holds the lease under its token', async () => {
      const now = Date.now();
      const isHeld = (holder: string, token: number) => underTest.unitOfWork.run((tx) => first.isHeld(tx, NAME, holder, token));
      expect(await isHeld('a', 1)).toBe(false);
      const lease = (await first.take(NAME, 'a', 1000, now))!;
      expect(await isHeld('a', lease.token)).toBe(true);
      expect(await isHeld('b', lease.token)).toBe(false);
      expect(await isHeld('a', lease.token + 1)).toBe(false);
      // Expired but taken by nobody since: its writes still fence out nobody else.
      expect(await second.holder(NAME, now + 1000)).toBeUndefined();
      expect(await isHeld('a', lease.token)).toBe(true);
      const taken = (await second.take(NAME, 'b', 1000, now + 1000))!;
      expect(await isHeld('a', lease.token)).toBe(false);
      expect(await isHeld('b', taken.token)).toBe(true);
      await second.release(NAME, 'b', taken.token);
      expect(await isHeld('b', taken.token)).toBe(false);
    });

    it('of concurrent takes of a free lease exactly one succeeds', async () => {
      const now = Date.now();
      const takes = await Promise.all(
        Array.from({ length: 6 }, (_, index) => (index % 2 === 0 ? first : second).take(NAME, `holder-${index}`, MINUTE_MS, now)),
      );
      const winners = takes.filter((lease) => lease !== undefined);
      expect(winners).toHaveLength(1);
      expect(await first.holder(NAME, now)).toEqual(winners[0]);
    });
  });
}
