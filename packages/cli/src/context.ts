import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { escapeHiddenCharacters, escapeHiddenCharactersInJson, stringifyExact } from '@gateway/core';

/** What every command receives: resolved global options and where to print. */
export interface CliContext {
  /** Absolute path of gateway.yaml (`--config`, default ./gateway.yaml). */
  configPath: string;
  /** Absolute path of tools.lock (`--lock`, default: tools.lock beside the config). */
  lockPath: string;
  /** `--json`: print one JSON document on stdout instead of human text. */
  json: boolean;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** Builds the context from the root program's global options. */
export function contextFrom(command: Command): CliContext {
  const options = command.optsWithGlobals<{ config?: string; lock?: string; json?: boolean }>();
  const configPath = resolve(options.config ?? 'gateway.yaml');
  const lockPath = options.lock ? resolve(options.lock) : resolve(dirname(configPath), 'tools.lock');
  return { configPath, lockPath, json: options.json === true, stdout: process.stdout, stderr: process.stderr };
}

/** Prints a command's result: `json` on stdout with --json, else the human lines. */
export function printResult(context: CliContext, human: string | string[], json: unknown): void {
  if (context.json) {
    // Schemas from the lock may hold integers beyond 2^53 (BigInts): printed with their exact digits. Hidden
    // characters (tool-text in core) are written as JSON escapes: the same value, never raw on a terminal.
    context.stdout.write(`${escapeHiddenCharactersInJson(stringifyExact(json, 2))}\n`);
  } else {
    // The renderers escape and flag tool text themselves; this keeps anything else printed from showing it raw.
    const text = escapeHiddenCharacters(Array.isArray(human) ? human.join('\n') : human);
    if (text.length > 0) context.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  }
}

/** Rows as aligned columns (two spaces between them), for the human output of list commands. */
export function table(rows: string[][], indent = '  '): string[] {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows.map(
    (row) =>
      indent +
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd(),
  );
}
