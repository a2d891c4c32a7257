/**
 * A token bucket per key (a client address, a client id): `perMinute` actions at once, refilled evenly over
 * a minute. In memory and per process, like the sign-in throttle; the number of keys is bounded.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly perMillisecond: number;

  constructor(
    private readonly perMinute: number,
    private readonly maxKeys = 100_000,
  ) {
    this.perMillisecond = perMinute / 60_000;
  }

  /** 0 when the key may act now (and the action is counted), else the whole seconds until it may. */
  take(key: string, now = Date.now()): number {
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= this.maxKeys) this.forgetIdle(now);
      bucket = { tokens: this.perMinute, at: now };
      this.buckets.set(key, bucket);
    } else {
      bucket.tokens = Math.min(this.perMinute, bucket.tokens + (now - bucket.at) * this.perMillisecond);
      bucket.at = now;
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.perMillisecond / 1000));
  }

  /** Keys whose bucket has refilled carry no information; if none has, the oldest half goes. */
  private forgetIdle(now: number): void {
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + (now - bucket.at) * this.perMillisecond >= this.perMinute) this.buckets.delete(key);
    }
    if (this.buckets.size < this.maxKeys) return;
    let excess = Math.ceil(this.buckets.size / 2);
    for (const key of this.buckets.keys()) {
      if (excess-- <= 0) break;
      this.buckets.delete(key);
    }
  }
}
