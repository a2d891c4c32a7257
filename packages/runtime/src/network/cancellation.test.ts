import { describe, expect, it } from 'vitest';
import { Cancellation, toAbortSignal } from './cancellation.js';

describe('Cancellation: an abort signal without an EventTarget', () => {
  it('runs each listener added before the abort once, in order; not a removed one, not again, not one added after', () => {
    const cancellation = new Cancellation();
    const heard: string[] = [];
    const first = () => heard.push('first');
    const removed = () => heard.push('removed');
    cancellation.addEventListener('abort', first, { once: true });
    cancellation.addEventListener('abort', removed);
    cancellation.addEventListener('abort', () => heard.push(`second, aborted ${cancellation.aborted}`));
    cancellation.removeEventListener('abort', removed);
    expect(cancellation.aborted).toBe(false);
    const reason = new Error('client went away');
    cancellation.abort(reason);
    cancellation.abort(new Error('a second abort'));
    cancellation.addEventListener('abort', () => heard.push('late'));
    expect(heard).toEqual(['first', 'second, aborted true']);
    expect(cancellation.reason).toBe(reason);
  });

  it('gives what needs a real AbortSignal one that follows it; an AbortSignal is passed as it is', () => {
    const cancellation = new Cancellation();
    const signal = toAbortSignal(cancellation);
    expect(signal).toBeInstanceOf(AbortSignal);
    expect(signal.aborted).toBe(false);
    const reason = new Error('cancelled');
    cancellation.abort(reason);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(reason);
    const gone = new Cancellation();
    gone.abort(reason);
    expect(toAbortSignal(gone).reason).toBe(reason);
    const controller = new AbortController();
    expect(toAbortSignal(controller.signal)).toBe(controller.signal);
  });
});
