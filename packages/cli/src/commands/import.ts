import type { Command } from 'commander';
import {
  applyImport,
  importLiveSource,
  loadConfig,
  readLockFile,
  sourceConfig,
  sourceLocation,
  writeLockFile,
  type ImportSummary,
} from '@gateway/core';
import { contextFrom, printResult } from '../context.js';
import { withGuardedFetcher } from '../network.js';
import { liveImportOptions } from '../live-source.js';

export function registerImport(program: Command): void {
  program
    .command('import')
    .description("read a source's OpenAPI document (or list an MCP server's tools) and write it into tools.lock as a proposed publication")
    .argument('<source>', 'a source name from gateway.yaml (sources.<name>)')
    .addHelpText(
      'after',
      '\nThe document (sources.<source>.document: a path relative to gateway.yaml, or an https URL) is read,\n' +
        "validated (OpenAPI 3.0, 3.1 or 3.2) and every operation normalised into a tool. The source's proposed\n" +
        'publication is written or replaced; nothing becomes callable until it is reviewed and published.\n' +
        'Operations unchanged since the publication in use keep their selection; changed ones start unselected.\n' +
        'An MCP source (kind: mcp) is connected to (stdio or HTTP), every tool listed (following pagination)\n' +
        'and normalised; its fingerprint covers name, title, description, schemas and annotations.\n' +
        'On any error the lock is left exactly as it was.\n' +
        '\nExamples:\n' +
        '  gateway import orders                    import and print a summary\n' +
        '  gateway import orders --json             the summary as JSON (operations, unsupported by reason,\n' +
        '                                           added/changed/removed versus the publication in use)\n' +
        '  gateway --config api/gateway.yaml import orders\n' +
        '\nNext: `gateway review <source>` to choose which operations become tools.',
    )
    .action(async (sourceName: string, _options: unknown, command: Command) => {
      const context = contextFrom(command);
      const loaded = await loadConfig(context.configPath);
      const source = sourceConfig(loaded, sourceName);
      // Read the lock before the (slow) import so a broken lock fails fast, and nothing is written until
      // the whole import succeeded: a failure at any step leaves the file byte for byte as it was.
      const lock = await readLockFile(context.lockPath, { missingIsEmpty: true });
      const imported = await withGuardedFetcher(loaded, (fetchText) =>
        importLiveSource(loaded, sourceName, liveImportOptions(loaded, lock, sourceName, fetchText)),
      );
      const location = sourceLocation(source);
      const { lock: next, summary } = applyImport(lock, sourceName, location, imported);
      await writeLockFile(context.lockPath, next);
      printResult(context, describeSummary(summary, location, context.lockPath), summary);
    });
}

function describeSummary(summary: ImportSummary, document: string, lockPath: string): string[] {
  const lines = [
    `imported ${summary.source} (${document}) into ${summary.publication} (proposed) in ${lockPath}`,
    `  operations   ${summary.operations}`,
    `  supported    ${summary.supported}`,
    `  unsupported  ${summary.unsupported}`,
  ];
  for (const [code, count] of Object.entries(summary.unsupportedByReason)) lines.push(`    ${code}  ${count}`);
  lines.push(`  selected     ${summary.selected}${summary.selected > 0 ? ' (carried forward)' : ''}`);
  const versus = summary.versusInUse;
  if (versus.publication === null) {
    lines.push('no publication in use yet: every operation is new');
  } else {
    lines.push(
      `versus ${versus.publication} (in use): ${versus.added.length} added, ` +
        `${versus.changed.length} changed, ${versus.removed.length} removed`,
    );
    for (const tool of versus.added) lines.push(`  + ${tool}`);
    for (const tool of versus.changed) lines.push(`  ~ ${tool}`);
    for (const tool of versus.removed) lines.push(`  - ${tool}`);
  }
  lines.push(`next: gateway review ${summary.source}`);
  return lines;
}
