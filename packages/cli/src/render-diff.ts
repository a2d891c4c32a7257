/**
 * Human renderings of `gateway diff`: plain text for terminals, Markdown for pull-request comments. Layout only:
 * every sentence about an operation comes from core (diff.ts), which the consent page and the console share.
 * Tool names, upstream names and change messages may hold hidden characters (core's tool-text): each line shows
 * them escaped as `\u{E0049}` and carries a flag, never the raw characters.
 */
import {
  addedNote,
  DOCUMENTATION_ONLY_NOTE,
  EACH_CALL_NOTE,
  escapeHiddenCharacters,
  operationLabel,
  REMOVED_NOTE,
  type ChangedOperation,
  type SourceDiff,
} from '@gateway/core';

const HIDDEN_FLAG = '! HIDDEN CHARACTERS, shown escaped';

/** One line as it may be shown: hidden characters escaped, and the flag appended when there were any. */
function shown(line: string, flag: (line: string) => string = (escaped) => `${escaped}  (${HIDDEN_FLAG})`): string {
  const escaped = escapeHiddenCharacters(line, { singleLine: true });
  return escaped === line ? line : flag(escaped);
}

function counts(diff: SourceDiff): string {
  return `${diff.added.length} added, ${diff.changed.length} changed, ${diff.removed.length} removed`;
}

function baselineLabel(diff: SourceDiff): string {
  return diff.baseline ? `${diff.baseline.publication} (${diff.baseline.status})` : 'nothing (not in the lock yet)';
}

export function renderDiffText(diffs: SourceDiff[]): string[] {
  const lines: string[] = [];
  for (const diff of diffs) {
    if (!diff.hasChanges) {
      lines.push(`${diff.source}: no changes (live description matches ${baselineLabel(diff)})`);
      continue;
    }
    lines.push(`${diff.source}: ${counts(diff)} (live description versus ${baselineLabel(diff)})`);
    for (const operation of diff.added) {
      lines.push(shown(`  + ${operation.tool}  ${operationLabel(operation)}  (${addedNote(operation)})`));
    }
    for (const operation of diff.changed) {
      lines.push(
        shown(`  ~ ${operation.tool}  ${operationLabel(operation)}${operation.requestChanged ? '' : `  (${DOCUMENTATION_ONLY_NOTE})`}`),
      );
      for (const change of operation.changes) lines.push(shown(`      ${change.message}`));
      if (operation.approval) lines.push(`      ${EACH_CALL_NOTE}`);
    }
    for (const operation of diff.removed) {
      lines.push(
        shown(`  - ${operation.tool}  ${operationLabel(operation)}  (${REMOVED_NOTE}${operation.approval ? `; ${EACH_CALL_NOTE}` : ''})`),
      );
    }
  }
  const changed = diffs.filter((diff) => diff.hasChanges).length;
  lines.push(changed === 0 ? 'no changes' : `${changed} source${changed === 1 ? '' : 's'} changed`);
  return lines;
}

/** Escapes text for a Markdown table cell (pipes and line breaks would break the row). */
function cell(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

function code(text: string): string {
  // Backticks inside inline code would end it early; double-backtick fences allow single ones.
  return text.includes('`') ? `\`\` ${cell(text)} \`\`` : `\`${cell(text)}\``;
}

function changeRows(operation: ChangedOperation): string {
  const details = [...operation.changes.map((change) => change.message), ...(operation.approval ? [EACH_CALL_NOTE] : [])]
    .map((message) => cell(message))
    .join('<br>');
  return `| changed | ${code(operation.tool)} | ${code(operationLabel(operation))} | ${details} |`;
}

export function renderDiffMarkdown(diffs: SourceDiff[]): string[] {
  const changed = diffs.filter((diff) => diff.hasChanges);
  const lines: string[] = ['## Tool changes', ''];
  if (changed.length === 0) {
    lines.push(
      `No changes: every live description matches the lock (${diffs.map((diff) => code(diff.source)).join(', ') || 'no sources'}).`,
    );
    return lines;
  }
  for (const diff of diffs) {
    lines.push(`### ${code(diff.source)}`, '');
    if (!diff.hasChanges) {
      lines.push(`No changes versus ${baselineLabel(diff)}.`, '');
      continue;
    }
    lines.push(`Live description versus ${baselineLabel(diff)}: ${counts(diff)}.`, '');
    lines.push('| | tool | operation | what changed |', '|---|---|---|---|');
    // A flagged row says so in its last cell, where a reader of the table looks for what happened.
    const flagRow = (row: string): string => `${row.slice(0, -2)}<br>**${HIDDEN_FLAG}** |`;
    for (const operation of diff.added) {
      lines.push(
        shown(`| added | ${code(operation.tool)} | ${code(operationLabel(operation))} | ${cell(addedNote(operation))} |`, flagRow),
      );
    }
    for (const operation of diff.changed) lines.push(shown(changeRows(operation), flagRow));
    for (const operation of diff.removed) {
      const note = operation.approval ? `${REMOVED_NOTE}; ${EACH_CALL_NOTE}` : REMOVED_NOTE;
      lines.push(shown(`| removed | ${code(operation.tool)} | ${code(operationLabel(operation))} | ${cell(note)} |`, flagRow));
    }
    lines.push('');
  }
  lines.push('Run `gateway import <source>`, `gateway review <source>` and `gateway publish <source>` to take these changes.');
  return lines;
}
