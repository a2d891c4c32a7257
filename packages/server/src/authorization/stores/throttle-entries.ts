import type { ThrottleEntries } from './ports.js';

/**
 * `entries` limited to the keys an update named (what every adapter hands `decide`): another key throws, so a
 * throttle cannot depend on state the adapter did not read, or lock, for the step.
 */
export function namedEntries(keys: readonly string[], entries: ThrottleEntries): ThrottleEntries {
  const check = (key: string): string => {
    // An update names one key or two: a scan is cheaper than building a set per update.
    if (!keys.includes(key)) throw new Error(`throttle key not named by this update: ${key}`);
    return key;
  };
  return {
    get: (key) => entries.get(check(key)),
    set: (key, entry, expiresAt) => entries.set(check(key), entry, expiresAt),
    delete: (key) => entries.delete(check(key)),
  };
}
