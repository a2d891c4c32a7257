import type { Command } from 'commander';
import {
  applySelection,
  describeSelectionChange,
  readLockFile,
  requireProposal,
  setSelection,
  writeLockFile,
  type Lockfile,
  type LockedEntry,
  type Publication,
  type SelectionChange,
} from '@gateway/core';
import { askSelection } from '../checklist.js';
import { contextFrom, printResult, type CliContext } from '../context.js';
import { describeApprovers, renderEntry } from '../render-schema.js';

interface ReviewOptions {
  select?: string[];
  deselect?: string[];
  allSupported?: boolean;
  eachCall?: string[];
  approvers?: string[];
  anyCall?: string[];
  interactive?: boolean;
}

export function registerReview(program: Command): void {
  program
    .command('review')
    .description("show every operation of a source's proposed publication and choose which become tools")
    .argument('<source>', 'a source name with a proposal in tools.lock (run `gateway import <source>` first)')
    .option('--select <patterns...>', 'select tools by name or glob (* any run of characters, ? one character)')
    .option('--deselect <patterns...>', 'deselect tools by name or glob (applied after --select)')
    .option('--all-supported', 'select every supported operation (applied before --select and --deselect)')
    .option('--each-call <patterns...>', 'tools whose every call waits for a person to approve that exact call')
    .option('--approvers <names...>', "who approves the --each-call tools: person names, @operators (default: the session's person)")
    .option('--any-call <patterns...>', 'tools whose calls no longer wait for approval (applied after --each-call)')
    .option('--no-interactive', 'only print, even in a terminal')
    .addHelpText(
      'after',
      '\nWithout selection flags, in a terminal: prints every operation, then a checklist (space toggles,\n' +
        'enter saves, Ctrl+C leaves the lock unchanged). Unsupported operations are listed with their reason\n' +
        'and cannot be selected. Not in a terminal (CI, pipes): prints only, never waits for input.\n' +
        '\nEach operation shows [x] selected, [ ] not selected or [-] unsupported, its tool name, method and\n' +
        'path, and its arguments: type, required or optional, and where each goes (path, query, header,\n' +
        'cookie, querystring or body with its media type); the body schema is unfolded a few levels deep.\n' +
        '\nExamples:\n' +
        '  gateway review orders                               look, and choose in a checklist\n' +
        "  gateway review orders --select 'get_*' create_order   select by name or glob (quote globs)\n" +
        "  gateway review orders --all-supported --deselect 'delete_*'\n" +
        "  gateway review orders --each-call 'create_*' --approvers @operators   a person approves each call\n" +
        '  gateway review orders --json                        the whole proposal as JSON\n' +
        '\nSelecting an unsupported operation by name fails with its reason (exit 7); a pattern matching no\n' +
        'tool name fails (exit 2). A tool reviewed --each-call runs only once a person approved that very\n' +
        'call (docs/approvals.md); the choice is signed with the publication and carried to later imports.\n' +
        'Next: `gateway publish <source> --key <file>`.',
    )
    .action(async (sourceName: string, options: ReviewOptions, command: Command) => {
      const context = contextFrom(command);
      const lock = await readLockFile(context.lockPath);
      const proposal = requireProposal(lock, sourceName) as Publication<LockedEntry>;
      const hasSelectionFlags =
        options.allSupported === true ||
        [options.select, options.deselect, options.eachCall, options.anyCall, options.approvers].some((list) => (list?.length ?? 0) > 0);

      if (hasSelectionFlags) {
        const next = applySelection(lock, sourceName, {
          ...(options.select ? { select: options.select } : {}),
          ...(options.deselect ? { deselect: options.deselect } : {}),
          ...(options.allSupported ? { allSupported: true } : {}),
          ...(options.eachCall ? { eachCall: options.eachCall } : {}),
          ...(options.approvers ? { approvers: options.approvers } : {}),
          ...(options.anyCall ? { anyCall: options.anyCall } : {}),
        });
        await saveAndReport(context, lock, next, sourceName, proposal);
        return;
      }

      const isTerminal = process.stdin.isTTY === true && process.stdout.isTTY === true;
      if (context.json) {
        printResult(context, '', proposal);
        return;
      }
      printResult(context, describeProposal(sourceName, proposal), null);
      if (!isTerminal || options.interactive === false) return;
      // A checklist whose every choice is disabled could only be dismissed: nothing to ask.
      if (!proposal.operations.some((operation) => operation.status === 'supported')) return;
      const chosen = await askSelection(sourceName, proposal, { input: process.stdin, output: process.stdout });
      await saveAndReport(context, lock, setSelection(lock, sourceName, chosen), sourceName, proposal);
    });
}

async function saveAndReport(
  context: CliContext,
  before: Lockfile,
  after: Lockfile,
  sourceName: string,
  proposal: Publication<LockedEntry>,
): Promise<void> {
  const change = describeSelectionChange(before, after, sourceName);
  if (hasChanges(change)) await writeLockFile(context.lockPath, after);
  printResult(context, describeChange(change, proposal.id), { source: sourceName, publication: proposal.id, ...change });
}

function hasChanges(change: SelectionChange): boolean {
  return change.selected.length > 0 || change.deselected.length > 0 || change.approvals.length > 0;
}

function describeChange(change: SelectionChange, publication: string): string[] {
  if (!hasChanges(change)) {
    return [`no change: ${publication} offers ${change.toolCount} tool${change.toolCount === 1 ? '' : 's'}`];
  }
  const lines = [
    ...change.selected.map((tool) => `+ ${tool}`),
    ...change.deselected.map((tool) => `- ${tool}`),
    ...change.approvals.map((entry) =>
      entry.approval === 'each-call'
        ? `~ ${entry.tool}: each call waits for ${describeApprovers(entry.approvers ?? undefined)}`
        : `~ ${entry.tool}: calls no longer wait for approval`,
    ),
    `${publication} now offers ${change.toolCount} tool${change.toolCount === 1 ? '' : 's'} (proposed; publish to serve them)`,
  ];
  return lines;
}

function describeProposal(sourceName: string, proposal: Publication<LockedEntry>): string[] {
  const supported = proposal.operations.filter((operation) => operation.status === 'supported').length;
  const lines = [
    `${sourceName}: ${proposal.id} (proposed), ${proposal.operations.length} operations, ${supported} supported, ` +
      `${proposal.toolCount} selected`,
    '',
  ];
  for (const operation of proposal.operations) lines.push(...renderEntry(operation), '');
  if (proposal.operations.length === 0) lines.push('(the document has no operations)', '');
  lines.push(`choose with: gateway review ${sourceName} --select <names or globs…> | --deselect … | --all-supported`);
  return lines;
}
