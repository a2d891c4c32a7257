import { Command, CommanderError } from 'commander';
import { EXIT_CODES, GatewayError, escapeHiddenCharacters, escapeHiddenCharactersInJson, isGatewayError } from '@gateway/core';
import { registerCommands } from './commands/index.js';

export const VERSION = '0.1.0';

export function buildProgram(): Command {
  const program = new Command('gateway')
    .description('A governed tool gateway for AI agents: reviewed OpenAPI tools behind one MCP address.')
    .version(VERSION)
    .option('-c, --config <file>', 'gateway configuration file', 'gateway.yaml')
    .option('-l, --lock <file>', 'lockfile (default: tools.lock beside the config)')
    .option('--json', 'print machine-readable JSON on stdout')
    .showHelpAfterError('(run with --help for usage)')
    .configureHelp({ showGlobalOptions: true })
    .exitOverride();
  registerCommands(program);
  program.addHelpText(
    'after',
    '\nTypical flow:\n' +
      '  gateway init                      write a commented gateway.yaml\n' +
      '  gateway import orders             import a source into tools.lock as a proposal\n' +
      '  gateway review orders             choose which operations become tools\n' +
      '  gateway publish orders --key K    freeze and sign the proposal\n' +
      '  gateway verify                    check signatures and fingerprints (CI)\n' +
      '  gateway diff --exit-code          fail CI when a live description drifted\n' +
      '\nExit codes: 0 ok, 1 differences found (diff --exit-code), 2 usage, 3 config, 4 document,\n' +
      '5 lock, 6 verification, 7 refused, 8 network, 9 auth, 70 internal. See docs/cli.md.',
  );
  return program;
}

/** Runs the CLI and returns the exit code; never lets an error escape as a stack trace. */
export async function runCli(argv: string[]): Promise<number> {
  const program = buildProgram();
  const wantsJson = argv.includes('--json');
  try {
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are successes; everything else commander reports is a usage error.
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help') return 0;
      // Commander already wrote its message on stderr; a script that asked for --json gets the same error as JSON.
      if (wantsJson) {
        const usage = new GatewayError('USAGE_INVALID', error.message.replace(/^error: /, ''), {
          details: { parserCode: error.code },
        });
        process.stdout.write(`${JSON.stringify({ error: usage.toJSON() }, null, 2)}\n`);
      }
      return EXIT_CODES.usage;
    }
    const gatewayError = isGatewayError(error)
      ? error
      : new GatewayError('INTERNAL_ERROR', `unexpected error: ${(error as Error)?.message ?? String(error)}`, {
          cause: error,
        });
    // An error may quote tool text (a selected tool's name, a reason): never printed with hidden characters raw.
    if (wantsJson) {
      process.stdout.write(`${escapeHiddenCharactersInJson(JSON.stringify({ error: gatewayError.toJSON() }, null, 2))}\n`);
    }
    process.stderr.write(`error ${gatewayError.code}: ${escapeHiddenCharacters(gatewayError.message)}\n`);
    if (gatewayError.category === 'internal' && process.env.GATEWAY_DEBUG && error instanceof Error) {
      process.stderr.write(`${error.stack}\n`);
    }
    return EXIT_CODES[gatewayError.category];
  }
}
