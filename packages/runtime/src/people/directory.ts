import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { compareText, GatewayError, writeFileAtomically } from '@gateway/core';

/**
 * Local accounts, the embedded default way to sign in: a small JSON file of names, optional emails and
 * scrypt password hashes (RFC 7914). It lives in a file rather than the database so an operator can
 * back it up, inspect and manage it apart from the runtime state, and `gateway people` edits it offline.
 */
/** What a person may do beyond approving their own sessions: `operator` opens the console (docs/console.md). */
export type PersonRole = 'operator';
export const PERSON_ROLES: readonly PersonRole[] = ['operator'];

export interface LocalPerson {
  name: string;
  email?: string;
  /** Absent: none (people files from before roles read the same). */
  roles?: PersonRole[];
  /** `scrypt$<N>$<r>$<p>$<salt b64url>$<hash b64url>`. */
  passwordHash: string;
  createdAt: string;
}

export interface PersonSummary {
  name: string;
  email?: string;
  /** Sorted; empty when the person has none. */
  roles: PersonRole[];
  createdAt: string;
  /** The stable subject used in sessions and tokens. */
  subject: string;
}

interface PeopleFile {
  people: LocalPerson[];
}

const SCRYPT = { N: 32768, r: 8, p: 1, keyLength: 32 } as const;
const MINIMUM_PASSWORD_LENGTH = 12;

function scrypt(password: string, salt: Buffer, parameters: { N: number; r: number; p: number }, keyLength: number): Promise<Buffer> {
  const options: ScryptOptions = { ...parameters, maxmem: 256 * parameters.N * parameters.r };
  return new Promise((resolve, reject) =>
    scryptCallback(password.normalize('NFKC'), salt, keyLength, options, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, SCRYPT, SCRYPT.keyLength);
  return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

export async function verifyPassword(password: string, encoded: string): Promise<boolean> {
  const parts = encoded.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  const expected = Buffer.from(parts[5]!, 'base64url');
  const actual = await scrypt(password, Buffer.from(parts[4]!, 'base64url'), { N, r, p }, expected.length);
  return timingSafeEqual(actual, expected);
}

/** A hash of a random password, verified against when the name is unknown so timing does not reveal names. */
let decoyHash: Promise<string> | undefined;

export function localSubject(name: string): string {
  return `local:${name}`;
}

export function checkPersonName(name: string): void {
  if (!/^[a-zA-Z0-9][a-zA-Z0-9._@-]{0,63}$/.test(name)) {
    throw new GatewayError('PERSON_NAME_INVALID', `'${name}' is not a valid name: use 1–64 letters, digits, '.', '_', '@' or '-'`);
  }
}

function summaryOf(person: LocalPerson): PersonSummary {
  return {
    name: person.name,
    ...(person.email ? { email: person.email } : {}),
    roles: [...(person.roles ?? [])].filter((role) => PERSON_ROLES.includes(role)).sort(compareText),
    createdAt: person.createdAt,
    subject: localSubject(person.name),
  };
}

/** Known roles, sorted and unique; PERSON_ROLE_INVALID names an unknown one. */
export function checkRoles(roles: readonly string[]): PersonRole[] {
  for (const role of roles) {
    if (!PERSON_ROLES.includes(role as PersonRole)) {
      throw new GatewayError('PERSON_ROLE_INVALID', `'${role}' is not a role; the roles are: ${PERSON_ROLES.join(', ')}`);
    }
  }
  return [...new Set(roles as PersonRole[])].sort(compareText);
}

export function checkPasswordStrength(password: string): void {
  if (password.length < MINIMUM_PASSWORD_LENGTH) {
    throw new GatewayError('PERSON_PASSWORD_WEAK', `a password needs at least ${MINIMUM_PASSWORD_LENGTH} characters`);
  }
}

export class PeopleDirectory {
  constructor(readonly path: string) {}

  private async read(): Promise<PeopleFile> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { people: [] };
      throw error;
    }
    try {
      const parsed = JSON.parse(text) as PeopleFile;
      if (!Array.isArray(parsed.people)) throw new Error('no people array');
      return parsed;
    } catch (error) {
      throw new GatewayError('PEOPLE_FILE_INVALID', `${this.path} is not a people file: ${(error as Error).message}`);
    }
  }

  private async write(file: PeopleFile): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true });
    file.people.sort((a, b) => compareText(a.name, b.name));
    // 0600: the hashes are slow to attack, not impossible.
    await writeFileAtomically(this.path, `${JSON.stringify(file, null, 2)}\n`, 0o600);
  }

  async list(): Promise<PersonSummary[]> {
    const file = await this.read();
    return file.people.map(summaryOf);
  }

  async add(
    name: string,
    password: string,
    options: { email?: string; replace?: boolean; roles?: readonly string[] } = {},
  ): Promise<PersonSummary> {
    checkPersonName(name);
    checkPasswordStrength(password);
    const roles = checkRoles(options.roles ?? []);
    const file = await this.read();
    const existing = file.people.findIndex((person) => person.name === name);
    if (existing >= 0 && !options.replace) {
      throw new GatewayError('PERSON_EXISTS', `'${name}' already has an account; remove it first or pass --replace to set a new password`);
    }
    const person: LocalPerson = {
      name,
      ...(options.email ? { email: options.email } : {}),
      ...(roles.length > 0 ? { roles } : {}),
      passwordHash: await hashPassword(password),
      createdAt: new Date().toISOString(),
    };
    if (existing >= 0) file.people[existing] = person;
    else file.people.push(person);
    await this.write(file);
    return summaryOf(person);
  }

  /** Sets a person's roles to exactly `roles` (none: `[]`); PERSON_NOT_FOUND for an unknown name. */
  async setRoles(name: string, roles: readonly string[]): Promise<PersonSummary> {
    const checked = checkRoles(roles);
    const file = await this.read();
    const person = file.people.find((candidate) => candidate.name === name);
    if (!person) throw new GatewayError('PERSON_NOT_FOUND', `no person named '${name}' in ${this.path}`);
    if (checked.length > 0) person.roles = checked;
    else delete person.roles;
    await this.write(file);
    return summaryOf(person);
  }

  /** A person's summary by name (the console's role check at sign-in); undefined when unknown. */
  async find(name: string): Promise<PersonSummary | undefined> {
    const person = (await this.read()).people.find((candidate) => candidate.name === name);
    return person ? summaryOf(person) : undefined;
  }

  async remove(name: string): Promise<boolean> {
    const file = await this.read();
    const remaining = file.people.filter((person) => person.name !== name);
    if (remaining.length === file.people.length) return false;
    await this.write({ people: remaining });
    return true;
  }

  /** The person when the password is right; the same work is done for unknown names. */
  async verify(name: string, password: string): Promise<PersonSummary | undefined> {
    const file = await this.read();
    const person = file.people.find((candidate) => candidate.name === name);
    if (!person) {
      decoyHash ??= hashPassword(randomBytes(16).toString('base64url'));
      await verifyPassword(password, await decoyHash);
      return undefined;
    }
    if (!(await verifyPassword(password, person.passwordHash))) return undefined;
    return summaryOf(person);
  }
}
