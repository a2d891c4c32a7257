/**
 * The interactive checklist of `gateway review` in a terminal: one line per operation, unsupported ones
 * shown but disabled with their reason, so a person sees everything and can pick only what may be served.
 */
import { GatewayError, escapeHiddenCharacters, type LockedEntry, type Publication } from '@gateway/core';
import { entryTarget } from './render-schema.js';

export interface ChecklistChoice {
  value: string;
  name: string;
  description: string;
  checked: boolean;
  disabled: boolean | string;
}

export function checklistChoices(proposal: Publication<LockedEntry>): ChecklistChoice[] {
  const width = Math.min(40, Math.max(0, ...proposal.operations.map((operation) => operation.tool.length)));
  return proposal.operations.map((operation) => {
    const isSupported = operation.status === 'supported';
    // Only a supported tool can be chosen, and it holds no hidden characters; the others are shown escaped.
    return {
      value: operation.tool,
      name: escapeHiddenCharacters(`${operation.tool.padEnd(width)}  ${entryTarget(operation)}`, { singleLine: true }),
      description: escapeHiddenCharacters((operation.title ?? operation.description).trim().split('\n')[0] ?? ''),
      checked: isSupported && operation.selected,
      disabled: isSupported ? false : `unsupported ${operation.reason?.code ?? ''}: ${operation.reason?.message ?? ''}`.trim(),
    };
  });
}

/** Asks which tools to select; resolves to the chosen tool names. Cancelling (Ctrl+C) changes nothing. */
export async function askSelection(
  sourceName: string,
  proposal: Publication<LockedEntry>,
  streams: { input: NodeJS.ReadableStream; output: NodeJS.WritableStream },
): Promise<string[]> {
  // Loaded only when a person reviews in a terminal: every other command (`serve` above all) skips it.
  const { default: checkbox } = await import('@inquirer/checkbox');
  try {
    return await checkbox(
      {
        message: `Tools of ${sourceName} (${proposal.id}): space toggles, a toggles all, enter saves`,
        choices: checklistChoices(proposal),
        pageSize: 20,
        loop: false,
      },
      { input: streams.input, output: streams.output },
    );
  } catch (error) {
    if ((error as Error)?.name === 'ExitPromptError' || (error as Error)?.name === 'AbortPromptError') {
      throw new GatewayError('REVIEW_CANCELLED', 'review cancelled; tools.lock was not changed');
    }
    throw error;
  }
}
