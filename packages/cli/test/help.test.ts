import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../src/program.js';

function everyCommand(command: Command, path: string[] = []): Array<{ path: string; command: Command }> {
  return command.commands.flatMap((child) => {
    const childPath = [...path, child.name()];
    return [{ path: childPath.join(' '), command: child }, ...everyCommand(child, childPath)];
  });
}

describe('--help teaches', () => {
  it('every command and subcommand has examples in its --help', () => {
    const program = buildProgram();
    const commands = everyCommand(program);
    expect(commands.length).toBeGreaterThan(20);
    const withoutExamples = commands
      .filter(({ command }) => {
        let text = '';
        command.configureOutput({ writeOut: (chunk) => (text += chunk), writeErr: () => undefined });
        command.outputHelp();
        return !text.includes('Examples:');
      })
      .map(({ path }) => path);
    expect(withoutExamples).toEqual([]);
  });
});
