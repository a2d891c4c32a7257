import type { Command } from 'commander';
import { liveImportOptions } from '../live-source.js';
import { GatewayError, diffSource, findSource, importLiveSource, loadConfig, readLockFile, sourceConfig } from '@gateway/core';
import { contextFrom, printResult } from '../context.js';
import { withGuardedFetcher } from '../network.js';
import { renderDiffMarkdown, renderDiffText } from '../render-diff.js';

interface DiffOptions {
  exitCode?: boolean;
  format?: string;
}

export function registerDiff(program: Command): void {
  program
    .command('diff')
    .description("compare each source's live description with tools.lock: added, changed and removed operations")
    .argument('[source]', 'one source name (default: every source in gateway.yaml)')
    .option('--exit-code', 'exit 1 when anything changed (a CI gate), 0 otherwise')
    .option('--format <format>', 'text or markdown (for a pull-request comment)', 'text')
    .addHelpText(
      'after',
      '\nThe live document is imported in memory (nothing is written) and compared, by tool name, with the\n' +
        "source's publication in use (or its proposal when nothing is published yet). Changed operations list\n" +
        'the request-shape difference: parameters added or removed, type or required changed, body schema,\n' +
        'server, security, method or path. Operations the publication leaves out (its notOffered list) count as\n' +
        'added only when they changed since it was published.\n' +
        '\nExamples:\n' +
        '  gateway diff                         every source, human text\n' +
        '  gateway diff orders --exit-code      fail (exit 1) when orders drifted\n' +
        '  gateway diff --format markdown       a table for a pull-request comment\n' +
        '  gateway diff --json                  {changed, sources:[{source, added, changed, removed, ...}]}',
    )
    .action(async (sourceName: string | undefined, options: DiffOptions, command: Command) => {
      const context = contextFrom(command);
      if (options.format !== 'text' && options.format !== 'markdown') {
        throw new GatewayError('USAGE_INVALID', `--format must be text or markdown, not ${JSON.stringify(options.format)}`);
      }
      const loaded = await loadConfig(context.configPath);
      const names = sourceName ? [sourceName] : Object.keys(loaded.config.sources).sort();
      for (const name of names) sourceConfig(loaded, name);
      const lock = await readLockFile(context.lockPath, { missingIsEmpty: true });
      const diffs = await withGuardedFetcher(loaded, async (fetchText) => {
        const found = [];
        for (const name of names) {
          const live = await importLiveSource(loaded, name, liveImportOptions(loaded, lock, name, fetchText));
          found.push(diffSource(name, findSource(lock, name), live));
        }
        return found;
      });
      const changed = diffs.some((diff) => diff.hasChanges);
      const human = options.format === 'markdown' ? renderDiffMarkdown(diffs) : renderDiffText(diffs);
      printResult(context, human, { changed, sources: diffs });
      if (changed && options.exitCode) process.exitCode = 1;
    });
}
