import { readFile, writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import {
  DEFAULT_CHECKPOINT_EVERY_RECEIPTS,
  EXIT_CODES,
  GatewayError,
  leafHash,
  loadConfig,
  RECEIPTS_SIGNING_KEY_SECRET,
  trustedReceiptKeys,
  type CollectedCheckpoint,
  receiptLeafBytes,
  receiptProofHolds,
  verifyReceiptLog,
  type AdminReceiptList,
  type AdminReceiptProof,
  type LogVerification,
  type Receipt,
} from '@gateway/core';
import { createVault } from '@gateway/runtime';
import { adminClient, withAdminOptions, type AdminClientOptions as AdminOptions } from '../admin-client.js';
import { contextFrom, printResult, type CliContext } from '../context.js';

/** The CloudEvents type of a signed checkpoint as the gateway delivers it (docs/receipts.md). */
const CHECKPOINT_EVENT_TYPE = 'io.service.receipts.checkpoint';

function describeReceipt(receipt: Receipt): string {
  const reason = receipt.reason ? ` ${receipt.reason}` : '';
  return (
    `${receipt.id}  ${receipt.time}  ${receipt.outcome}${reason}  ` + `${receipt.tool}  ${receipt.session ?? '-'}  ${receipt.person ?? '-'}`
  );
}

/** Parses an export (JSON lines); a malformed line is named. */
export function parseExport(text: string): {
  keys: string[];
  receipts: Array<{ receipt: Receipt; recordedLeafHash?: Buffer }>;
  checkpoints: Array<{ note: string; verifierKey: string }>;
} {
  const keys: string[] = [];
  const receipts: Array<{ receipt: Receipt; recordedLeafHash?: Buffer }> = [];
  const checkpoints: Array<{ note: string; verifierKey: string }> = [];
  for (const [number, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    let entry: { type?: unknown; verifierKey?: unknown; receipt?: unknown; leafHash?: unknown; note?: unknown };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      throw new GatewayError('RECEIPTS_EXPORT_INVALID', `line ${number + 1} of the export is not JSON`);
    }
    if (entry.type === 'key' && typeof entry.verifierKey === 'string') keys.push(entry.verifierKey);
    else if (entry.type === 'receipt' && entry.receipt && typeof entry.receipt === 'object') {
      receipts.push({
        receipt: entry.receipt as Receipt,
        ...(typeof entry.leafHash === 'string' ? { recordedLeafHash: Buffer.from(entry.leafHash, 'base64') } : {}),
      });
    } else if (entry.type === 'checkpoint' && typeof entry.note === 'string' && typeof entry.verifierKey === 'string') {
      checkpoints.push({ note: entry.note, verifierKey: entry.verifierKey });
    } else {
      throw new GatewayError('RECEIPTS_EXPORT_INVALID', `line ${number + 1} of the export is not a key, receipt or checkpoint line`);
    }
  }
  return { keys, receipts, checkpoints };
}

/**
 * Parses checkpoints collected elsewhere: one structured-mode CloudEvent (JSON) per line, as a receiver stores
 * them. Lines of other event types are skipped; a line that is not JSON, or a checkpoint event whose `id` or
 * `data` is not of the documented shape, is an error naming its line.
 */
export function parseCheckpointEvents(text: string, file: string): CollectedCheckpoint[] {
  const collected: CollectedCheckpoint[] = [];
  for (const [number, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    const invalid = (why: string) => new GatewayError('RECEIPTS_CHECKPOINTS_INVALID', `line ${number + 1} of ${file} ${why}`);
    let event: { type?: unknown; id?: unknown; data?: unknown };
    try {
      event = JSON.parse(line) as typeof event;
    } catch {
      throw invalid('is not JSON');
    }
    if (event === null || typeof event !== 'object' || Array.isArray(event)) throw invalid('is not a CloudEvent (a JSON object)');
    if (event.type !== CHECKPOINT_EVENT_TYPE) continue;
    const data = event.data as { origin?: unknown; treeSize?: unknown; rootHash?: unknown; note?: unknown } | null | undefined;
    if (typeof event.id !== 'string' || event.id === '') throw invalid('is a checkpoint event without an id');
    if (
      !data ||
      typeof data !== 'object' ||
      typeof data.origin !== 'string' ||
      !Number.isSafeInteger(data.treeSize) ||
      typeof data.rootHash !== 'string' ||
      typeof data.note !== 'string'
    ) {
      throw invalid('is a checkpoint event whose data is not { origin, treeSize, rootHash, note }');
    }
    collected.push({ id: event.id, note: data.note, origin: data.origin, treeSize: data.treeSize as number, rootHash: data.rootHash });
  }
  return collected;
}

/**
 * What a local verification trusts: `--key`, else the configuration's `receipts.trustedKeys` and the vault's
 * signing key; never the keys an export names. Also the bound on receipts without a checkpoint.
 */
async function localTrust(context: CliContext, keys: string[] | undefined): Promise<{ trustedKeys: string[]; uncoveredBound: number }> {
  let loaded: Awaited<ReturnType<typeof loadConfig>> | undefined;
  try {
    loaded = await loadConfig(context.configPath);
  } catch (error) {
    if (!keys) {
      throw new GatewayError(
        'RECEIPTS_TRUSTED_KEY_MISSING',
        `no checkpoint key to trust: pass --key <verifier key>, or run where gateway.yaml and its vault are (${(error as Error).message})`,
      );
    }
  }
  const uncoveredBound = loaded?.config.receipts?.checkpoint?.everyReceipts ?? DEFAULT_CHECKPOINT_EVERY_RECEIPTS;
  if (keys) return { trustedKeys: keys, uncoveredBound };
  const signingKey = await (await createVault(loaded!)).get(RECEIPTS_SIGNING_KEY_SECRET);
  const trustedKeys = trustedReceiptKeys(loaded!, signingKey);
  if (trustedKeys.length === 0) {
    throw new GatewayError(
      'RECEIPTS_TRUSTED_KEY_MISSING',
      `no checkpoint key to trust: the vault has no '${RECEIPTS_SIGNING_KEY_SECRET}' and receipts.trustedKeys is empty; ` +
        'pass --key <verifier key>',
    );
  }
  return { trustedKeys, uncoveredBound };
}

async function readInput(path: string, code: 'RECEIPTS_EXPORT_INVALID' | 'RECEIPTS_CHECKPOINTS_INVALID'): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new GatewayError(code, `cannot read ${path}: ${(error as Error).message}`);
  }
}

function describeVerification(source: string, report: LogVerification): string[] {
  const collected = report.collectedVerified === undefined ? '' : `, ${report.collectedVerified} collected checkpoints consistent`;
  const waiting = report.uncoveredReceipts > 0 ? ` (${report.uncoveredReceipts} receipts after the last one)` : '';
  if (report.ok)
    return [
      `receipt log OK (${source}): ${report.treeSize} receipts, ` +
        `${report.checkpointsVerified} signed checkpoints verified${waiting}${collected}`,
    ];
  return [
    `receipt log BROKEN (${source})${report.firstBrokenReceipt ? `: first broken receipt ${report.firstBrokenReceipt}` : ''}`,
    ...report.problems.map((problem) => `  - ${problem}`),
  ];
}

export function registerReceipts(program: Command): void {
  const receipts = program
    .command('receipts')
    .description("a running gateway's receipt log: one receipt per governed call, in a signed Merkle tree (docs/receipts.md)")
    .addHelpText(
      'after',
      '\nCommands other than `verify --file` read the admin API (token from GATEWAY_ADMIN_TOKEN or the vault).\n' +
        '\nExamples:\n' +
        '  gateway receipts list --session session-3 --outcome denied\n' +
        '  gateway receipts show receipt-42\n' +
        '  gateway receipts export > receipts.jsonl\n' +
        '  gateway receipts prove receipt-42\n' +
        '  gateway receipts verify --file receipts.jsonl --key "<verifier key>"',
    );

  withAdminOptions(
    receipts
      .command('list')
      .description('list receipts, oldest first')
      .addHelpText(
        'after',
        '\nExamples:\n  gateway receipts list --session session-3\n  gateway receipts list --outcome denied --since ' +
          '2026-11-01T00:00:00Z --json',
      )
      .option('--session <id>', 'only this session (session-<n>)')
      .option('--tool <name>', 'only this tool')
      .option('--person <subject>', 'only this person')
      .option('--outcome <outcome>', 'allowed, denied or error')
      .option('--since <time>', 'at or after this ISO 8601 time')
      .option('--until <time>', 'at or before this ISO 8601 time')
      .option('--after <id>', 'receipts after this one (paging)')
      .option('--limit <n>', 'at most this many (1-1000)', '100'),
  ).action(async (options: AdminOptions & Record<string, string | undefined>, command: Command) => {
    const context = contextFrom(command);
    const query = new URLSearchParams();
    for (const name of ['session', 'tool', 'person', 'outcome', 'since', 'until', 'after', 'limit']) {
      if (options[name] !== undefined) query.set(name, options[name]!);
    }
    const page = await (await adminClient(context, options)).request<AdminReceiptList>('GET', `receipts?${query.toString()}`);
    const lines = page.receipts.length === 0 ? ['no receipts'] : page.receipts.map(describeReceipt);
    if (page.next) lines.push(`more: --after ${page.next}`);
    printResult(context, lines, page);
  });

  withAdminOptions(
    receipts
      .command('show <id>')
      .description('one receipt, every field')
      .addHelpText('after', '\nExamples:\n  gateway receipts show receipt-42'),
  ).action(async (id: string, options: AdminOptions, command: Command) => {
    const context = contextFrom(command);
    const receipt = await (await adminClient(context, options)).request<Receipt>('GET', `receipts/${encodeURIComponent(id)}`);
    printResult(context, JSON.stringify(receipt, null, 2), receipt);
  });

  withAdminOptions(
    receipts
      .command('export')
      .description('the whole log as JSON lines: verifier keys, receipts in leaf order, signed checkpoints')
      .addHelpText('after', '\nExamples:\n  gateway receipts export > receipts.jsonl')
      .option('--out <file>', 'write to this file instead of stdout'),
  ).action(async (options: AdminOptions & { out?: string }, command: Command) => {
    const context = contextFrom(command);
    const text = await (await adminClient(context, options)).text('receipts/export');
    if (options.out) {
      await writeFile(options.out, text);
      context.stderr.write(`wrote ${text.split('\n').filter(Boolean).length} lines to ${options.out}\n`);
    } else {
      context.stdout.write(text);
    }
  });

  registerProve(receipts);
  registerVerify(receipts);
}

/** `gateway receipts prove <id>`: the inclusion proof, checked here against the signed checkpoint. */
function registerProve(receipts: Command): void {
  withAdminOptions(
    receipts
      .command('prove <id>')
      .description('inclusion proof of a receipt against the latest signed checkpoint, checked here')
      .addHelpText('after', '\nExamples:\n  gateway receipts prove receipt-42 --json'),
  ).action(async (id: string, options: AdminOptions, command: Command) => {
    const context = contextFrom(command);
    const proof = await (await adminClient(context, options)).request<AdminReceiptProof>('GET', `receipts/${encodeURIComponent(id)}/proof`);
    // Checked here, not trusted: the leaf from the receipt itself, the root from the signed note.
    const leaf = leafHash(receiptLeafBytes(proof.receipt));
    const isIncluded = receiptProofHolds(proof);
    const lines = [
      `${proof.receipt.id} is leaf ${proof.receipt.index} of ${proof.checkpoint.treeSize}`,
      `leaf hash ${leaf.toString('base64')}`,
      'inclusion path:',
      ...proof.inclusionPath.map((hash) => `  ${hash}`),
      'checkpoint:',
      ...proof.checkpoint.note
        .trimEnd()
        .split('\n')
        .map((line) => `  ${line}`),
      `verifier key ${proof.checkpoint.verifierKey}`,
      isIncluded ? 'proof OK: the signature verifies and the receipt is in the signed tree' : 'proof FAILED',
    ];
    printResult(context, lines, { ...proof, verified: isIncluded });
    if (!isIncluded) process.exitCode = EXIT_CODES.verification;
  });
}

/** `gateway receipts verify`: the running gateway's log, an export, or either against collected checkpoints. */
function registerVerify(receipts: Command): void {
  withAdminOptions(
    receipts
      .command('verify')
      .description(
        'recompute the tree, check every checkpoint signature (trusted keys only) and consistency; name the first broken receipt',
      )
      .addHelpText(
        'after',
        '\nKeys: --key, else receipts.trustedKeys and the vault signing key of gateway.yaml; never a key the log names.\n' +
          '\nExamples:\n  gateway receipts verify\n  gateway receipts verify --file receipts.jsonl\n' +
          '  gateway receipts verify --checkpoints received-checkpoints.jsonl',
      )
      .option('--file <export>', 'verify an export (JSON lines) instead of the running gateway database')
      .option('--key <verifierKey...>', 'accept only checkpoints signed by these verifier keys (with --file or --checkpoints)')
      .option(
        '--checkpoints <file>',
        'also check the log against checkpoints collected elsewhere: one io.service.receipts.checkpoint CloudEvent per line',
      ),
  ).action(async (options: AdminOptions & { file?: string; key?: string[]; checkpoints?: string }, command: Command) => {
    const context = contextFrom(command);
    let report: LogVerification;
    let source: string;
    if (options.file || options.checkpoints) {
      // Verified here: an export (the file, or the running gateway's) against the keys this side trusts.
      const collected = options.checkpoints
        ? parseCheckpointEvents(await readInput(options.checkpoints, 'RECEIPTS_CHECKPOINTS_INVALID'), options.checkpoints)
        : undefined;
      const trust = await localTrust(context, options.key);
      const text = options.file
        ? await readInput(options.file, 'RECEIPTS_EXPORT_INVALID')
        : await (await adminClient(context, options)).text('receipts/export');
      const parsed = parseExport(text);
      report = verifyReceiptLog({
        receipts: parsed.receipts,
        checkpoints: parsed.checkpoints,
        ...trust,
        ...(collected ? { collected } : {}),
      });
      source = (options.file ?? "the gateway's export") + (options.checkpoints ? ` against ${options.checkpoints}` : '');
    } else {
      report = await (await adminClient(context, options)).request<LogVerification>('GET', 'receipts/verify');
      source = 'the gateway database';
    }
    printResult(context, describeVerification(source, report), report);
    if (!report.ok) process.exitCode = EXIT_CODES.verification;
  });
}
