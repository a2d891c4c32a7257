import type { Command } from 'commander';
import { GatewayError, loadConfig } from '@gateway/core';
import { checkRoles, PeopleDirectory, peopleFilePath } from '@gateway/runtime';
import { contextFrom, printResult } from '../context.js';
import { readHiddenLines } from '../terminal.js';

/**
 * The password: never from argv. On a terminal it is typed twice with echo off (a typo in a hidden password
 * would otherwise lock the person out); piped input is read to the end.
 */
async function readPassword(): Promise<string> {
  if (process.stdin.isTTY) {
    const [first, second] = await readHiddenLines(['password (not echoed): ', 'the same password again: '], 'USAGE_INVALID');
    if (first !== second) throw new GatewayError('USAGE_INVALID', 'the two passwords differ; nothing was changed');
    if (first === '') throw new GatewayError('USAGE_INVALID', 'no password typed');
    return first!;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  // One line: the trailing newline of `echo` / a here-string is not part of the password.
  const password = text.replace(/\r?\n$/, '');
  if (password.includes('\n')) {
    throw new GatewayError('USAGE_INVALID', 'give the password as a single line on stdin');
  }
  if (password === '')
    throw new GatewayError('USAGE_INVALID', 'no password on stdin (pipe it in: `gateway people add alice < password.txt`)');
  return password;
}

function rolesText(roles: readonly string[]): string {
  return roles.length === 0 ? '' : `  (${roles.join(', ')})`;
}

export function registerPeople(program: Command): void {
  const people = program
    .command('people')
    .description('local accounts that can sign in to approve access (a file beside the database, scrypt hashes)')
    .addHelpText(
      'after',
      '\nExamples:\n  printf "%s" "$PASSWORD" | gateway people add alice --email alice@example.com\n' +
        '  gateway people add olga --role operator < olga-password.txt    an operator: opens the console\n' +
        '  gateway people roles alice operator                           give alice the operator role\n' +
        '  gateway people roles alice                                    take every role away\n' +
        '  gateway people list\n  gateway people remove alice',
    );

  people
    .command('add <name>')
    .description('add a person; the password is typed twice (not echoed) or piped on stdin, never given on the command line')
    .option('--email <address>', 'shown on the consent page')
    .option('--replace', 'set a new password for an existing person')
    .option('--role <roles...>', 'roles: operator (opens the operator console at /console)')
    .addHelpText(
      'after',
      '\nExamples:\n  printf "%s" "$PASSWORD" | gateway people add alice --email alice@example.com\n  gateway people add bob < ' +
        'bob-password.txt\n  gateway people add olga --role operator < olga-password.txt',
    )
    .action(async (name: string, options: { email?: string; replace?: boolean; role?: string[] }, command: Command) => {
      const context = contextFrom(command);
      const directory = new PeopleDirectory(peopleFilePath(await loadConfig(context.configPath)));
      checkRoles(options.role ?? []);
      const person = await directory.add(name, await readPassword(), {
        ...(options.email ? { email: options.email } : {}),
        ...(options.replace ? { replace: true } : {}),
        ...(options.role ? { roles: options.role } : {}),
      });
      printResult(
        context,
        `added ${person.name}${person.email ? ` <${person.email}>` : ''}${rolesText(person.roles)} to ${directory.path}`,
        {
          person,
          file: directory.path,
        },
      );
    });

  people
    .command('roles <name> [roles...]')
    .description("set a person's roles to exactly those given (none given: no role); the password stays")
    .addHelpText(
      'after',
      '\nRoles: operator (opens the operator console at /console).\n\nExamples:\n' +
        '  gateway people roles olga operator\n  gateway people roles olga',
    )
    .action(async (name: string, roles: string[], _options: unknown, command: Command) => {
      const context = contextFrom(command);
      const directory = new PeopleDirectory(peopleFilePath(await loadConfig(context.configPath)));
      const person = await directory.setRoles(name, roles);
      printResult(context, `${person.name} now has ${person.roles.length === 0 ? 'no role' : `the role ${person.roles.join(', ')}`}`, {
        person,
      });
    });

  people
    .command('remove <name>')
    .description('remove a person (their open sessions stay until revoked: `gateway sessions revoke`)')
    .addHelpText('after', '\nExamples:\n  gateway people remove alice')
    .action(async (name: string, _options: unknown, command: Command) => {
      const context = contextFrom(command);
      const directory = new PeopleDirectory(peopleFilePath(await loadConfig(context.configPath)));
      if (!(await directory.remove(name))) {
        throw new GatewayError('PERSON_NOT_FOUND', `no person named '${name}' in ${directory.path}`);
      }
      printResult(context, `removed ${name}`, { removed: name });
    });

  people
    .command('list')
    .description('list people (names and emails; never hashes)')
    .addHelpText('after', '\nExamples:\n  gateway people list\n  gateway people list --json')
    .action(async (_options: unknown, command: Command) => {
      const context = contextFrom(command);
      const directory = new PeopleDirectory(peopleFilePath(await loadConfig(context.configPath)));
      const list = await directory.list();
      printResult(
        context,
        list.length === 0
          ? 'no people yet: add one with `gateway people add <name>`'
          : list.map(
              (person) => `${person.name}${person.email ? `  <${person.email}>` : ''}${rolesText(person.roles)}  added ${person.createdAt}`,
            ),
        { people: list },
      );
    });
}
