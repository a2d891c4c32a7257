import { spawn } from 'node:child_process';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PeopleDirectory } from '@gateway/runtime';
import { gatewayBinary, runGateway, temporaryDirectory } from '../../../test-support/cli.js';

/**
 * Runs `gateway people add <name>` on a real pseudo-terminal (util-linux `script`), typing each line only
 * once the prompt for it is on screen, as a person would; returns everything the terminal showed.
 */
async function addOnTerminal(name: string, typed: string[]): Promise<{ exitCode: number | null; screen: string }> {
  const child = spawn('script', ['-qec', `"${process.execPath}" "${gatewayBinary}" people add ${name}`, '/dev/null'], {
    cwd: directory,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1' },
  });
  let screen = '';
  const prompts = ['password (not echoed): ', 'the same password again: '];
  let answered = 0;
  let from = 0;
  child.stdout.on('data', (chunk: Buffer) => {
    screen += chunk.toString();
    for (
      let at = screen.indexOf(prompts[answered] ?? '\u0000', from);
      answered < typed.length && at >= 0;
      at = screen.indexOf(prompts[answered] ?? '\u0000', from)
    ) {
      from = at + prompts[answered]!.length;
      child.stdin.write(`${typed[answered]!}\r`);
      answered += 1;
    }
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const exitCode = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(timer);
  return { exitCode, screen };
}

let directory: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  const temporary = await temporaryDirectory('gateway-people-');
  directory = temporary.path;
  cleanup = temporary.cleanup;
  await writeFile(join(directory, 'gateway.yaml'), 'gateway:\n  url: http://127.0.0.1:8080\nsources: {}\n');
});
afterAll(async () => {
  await cleanup?.();
});

describe('gateway people', () => {
  it('add reads the password from stdin and stores only a scrypt hash, in a 0600 file', async () => {
    const result = await runGateway(['people', 'add', 'alice', '--email', 'alice@example.com'], {
      cwd: directory,
      input: 'a long enough secret phrase\n',
    });
    expect(result.exitCode, String(result.stderr)).toBe(0);
    const path = join(directory, '.gateway', 'people.json');
    const text = await readFile(path, 'utf8');
    expect(text).not.toContain('a long enough secret phrase');
    expect(text).toMatch(/"passwordHash": "scrypt\$32768\$8\$1\$/);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });

  it('list shows names and emails, never hashes', async () => {
    const result = await runGateway(['--json', 'people', 'list'], { cwd: directory });
    expect(result.exitCode).toBe(0);
    const body = JSON.parse(String(result.stdout)) as { people: Array<Record<string, unknown>> };
    expect(body.people).toEqual([expect.objectContaining({ name: 'alice', email: 'alice@example.com', subject: 'local:alice' })]);
    expect(String(result.stdout)).not.toContain('scrypt');
  });

  it('a short password is refused as a usage error', async () => {
    const result = await runGateway(['people', 'add', 'bob'], { cwd: directory, input: 'short\n' });
    expect(result.exitCode).toBe(2);
    expect(String(result.stderr)).toContain('PERSON_PASSWORD_WEAK');
  });

  it('adding an existing person is refused unless --replace', async () => {
    const again = await runGateway(['people', 'add', 'alice'], { cwd: directory, input: 'another long secret phrase\n' });
    expect(again.exitCode).toBe(7);
    expect(String(again.stderr)).toContain('PERSON_EXISTS');
    const replaced = await runGateway(['people', 'add', 'alice', '--replace'], { cwd: directory, input: 'another long secret phrase\n' });
    expect(replaced.exitCode).toBe(0);
  });

  it('remove deletes the account; removing an unknown name is a usage error', async () => {
    expect((await runGateway(['people', 'remove', 'alice'], { cwd: directory })).exitCode).toBe(0);
    const list = await runGateway(['--json', 'people', 'list'], { cwd: directory });
    expect(JSON.parse(String(list.stdout))).toEqual({ people: [] });
    const unknown = await runGateway(['people', 'remove', 'nobody'], { cwd: directory });
    expect(unknown.exitCode).toBe(2);
    expect(String(unknown.stderr)).toContain('PERSON_NOT_FOUND');
  });

  it('on a terminal, add asks for the password twice without echoing it; two different ones change nothing', async () => {
    const typed = await addOnTerminal('carol', ['a long careful phrase', 'a long careful phrase']);
    expect(typed.exitCode, typed.screen).toBe(0);
    expect(typed.screen).toContain('password (not echoed): ');
    expect(typed.screen).toContain('added carol');
    expect(typed.screen).not.toContain('a long careful phrase');
    const people = new PeopleDirectory(join(directory, '.gateway', 'people.json'));
    expect(await people.verify('carol', 'a long careful phrase')).toBeDefined();

    const mismatch = await addOnTerminal('dave', ['a long careful phrase', 'a different long phrase']);
    expect(mismatch.exitCode, mismatch.screen).toBe(2);
    expect(mismatch.screen).toContain('USAGE_INVALID: the two passwords differ');
    expect((await people.list()).map((person) => person.name)).not.toContain('dave');
  });

  it('roles: --role operator at add, `people roles` sets them exactly (password kept), unknown roles and names refused', async () => {
    const added = await runGateway(['--json', 'people', 'add', 'olga', '--role', 'operator'], {
      cwd: directory,
      input: 'olga has a long phrase\n',
    });
    expect(added.exitCode, String(added.stderr)).toBe(0);
    expect(JSON.parse(String(added.stdout)).person).toMatchObject({ name: 'olga', roles: ['operator'] });
    const listed = await runGateway(['people', 'list'], { cwd: directory });
    expect(String(listed.stdout)).toMatch(/^olga {2}\(operator\) {2}added /m);

    const none = await runGateway(['people', 'roles', 'olga'], { cwd: directory });
    expect(none.exitCode, String(none.stderr)).toBe(0);
    expect(String(none.stdout)).toContain('olga now has no role');
    const people = new PeopleDirectory(join(directory, '.gateway', 'people.json'));
    expect(await people.verify('olga', 'olga has a long phrase')).toMatchObject({ roles: [] });
    expect((await runGateway(['people', 'roles', 'olga', 'operator'], { cwd: directory })).exitCode).toBe(0);
    expect(await people.find('olga')).toMatchObject({ roles: ['operator'] });

    const unknownRole = await runGateway(['people', 'roles', 'olga', 'admin'], { cwd: directory });
    expect(unknownRole.exitCode).toBe(2);
    expect(String(unknownRole.stderr)).toMatch(/PERSON_ROLE_INVALID: 'admin' is not a role; the roles are: operator/);
    expect(await people.find('olga')).toMatchObject({ roles: ['operator'] });
    const badAdd = await runGateway(['people', 'add', 'pete', '--role', 'boss'], { cwd: directory, input: 'pete has a long phrase\n' });
    expect(badAdd.exitCode).toBe(2);
    expect(await people.find('pete')).toBeUndefined();
    const unknownPerson = await runGateway(['people', 'roles', 'nobody', 'operator'], { cwd: directory });
    expect(unknownPerson.exitCode).toBe(2);
    expect(String(unknownPerson.stderr)).toContain('PERSON_NOT_FOUND');
  });
});
