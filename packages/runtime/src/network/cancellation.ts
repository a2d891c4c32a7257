/**
 * What cancels a call's outbound work when its client goes away. An AbortSignal has these members; so does
 * Cancellation, the one the /mcp fast path makes for every call: on Node 20 making an AbortController (its
 * AbortSignal is an EventTarget) and hanging a listener on it costs about 7 µs, 1–2 % of a whole call's CPU, for a
 * signal that almost never fires (docs/performance.md › "A cancellation without an AbortController").
 */
export interface CancelSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * A CancelSignal and its trigger in one small object. As an AbortSignal: `abort` runs each listener added before
 * it once, in order, and later aborts do nothing; a listener added after the abort is not run (check `aborted`).
 */
export class Cancellation implements CancelSignal {
  aborted = false;
  reason: unknown = undefined;
  private listeners: Array<() => void> | undefined;

  /** Every listener runs at most once (abort happens once), so `once` changes nothing. */
  addEventListener(_type: 'abort', listener: () => void, _options?: { once?: boolean }): void {
    if (this.aborted) return;
    if (this.listeners) this.listeners.push(listener);
    else this.listeners = [listener];
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const index = this.listeners?.indexOf(listener) ?? -1;
    if (index >= 0) this.listeners!.splice(index, 1);
  }

  /** Aborts with `reason`, by default the DOMException an AbortController's `abort()` gives. */
  abort(reason: unknown = new DOMException('This operation was aborted', 'AbortError')): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = undefined;
    for (const listener of listeners ?? []) listener();
  }
}

/** An AbortSignal for what needs a real one (`AbortSignal.any`, the MCP SDK): `signal` itself when it is one. */
export function toAbortSignal(signal: CancelSignal): AbortSignal {
  if (signal instanceof AbortSignal) return signal;
  const controller = new AbortController();
  if (signal.aborted) controller.abort(signal.reason);
  else signal.addEventListener('abort', () => controller.abort(signal.reason), { once: true });
  return controller.signal;
}
