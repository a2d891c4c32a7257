import { addressBucket, type PeopleDirectory } from '@gateway/runtime';
import { AttemptThrottle } from '../oauth/rate-limit.js';
import type { AuthSettings } from '../oauth/settings.js';
import type { Throttles } from '../stores/ports.js';
import type { SignedInPerson } from './browser-sessions.js';

export type LocalSignInResult =
  | { ok: true; person: SignedInPerson }
  | { ok: false; status: 401 | 429; error: string; retryAfterSeconds?: number };

/**
 * A sign-in with a local account (the people file), throttled per name and per address: the one check behind
 * every page that signs a person in (the sign-in page of /authorize, the connect page of per-person logins), so
 * they share one count of failed attempts.
 */
export interface LocalSignIn {
  verify(name: string, password: string, address: string): Promise<LocalSignInResult>;
}

export function createLocalSignIn(
  settings: Pick<AuthSettings, 'maxFailedAttempts' | 'lockoutSeconds'>,
  people: PeopleDirectory,
  throttles: Throttles | undefined,
): LocalSignIn {
  const throttle = new AttemptThrottle('signin', settings.maxFailedAttempts, settings.lockoutSeconds, throttles);
  return {
    async verify(name, password, address) {
      const keys = [`name:${name.toLowerCase()}`, `address:${addressBucket(address)}`];
      // Holds a place before the password is checked: parallel guesses cannot all pass before one failure is recorded.
      const wait = await throttle.attempt(keys, Date.now(), { [keys[1]!]: settings.maxFailedAttempts * 10 });
      if (wait > 0) {
        return {
          ok: false,
          status: 429,
          error: `Too many failed attempts. Try again in ${wait < 60 ? `${wait} second(s)` : `${Math.ceil(wait / 60)} minute(s)`}.`,
          retryAfterSeconds: wait,
        };
      }
      let person: Awaited<ReturnType<PeopleDirectory['verify']>>;
      try {
        person = name && password ? await people.verify(name, password) : undefined;
      } catch (error) {
        // Not a wrong password (the people file could not be read): the attempt gives its place back.
        await throttle.succeeded(keys);
        throw error;
      }
      if (!person) {
        await throttle.failed(keys);
        return { ok: false, status: 401, error: 'That name and password do not match an account.' };
      }
      await throttle.succeeded(keys, { clear: [keys[0]!] });
      return {
        ok: true,
        person: {
          subject: person.subject,
          name: person.name,
          ...(person.email ? { email: person.email } : {}),
          via: 'local',
          roles: [...person.roles],
        },
      };
    },
  };
}
