import type { Operation } from '@gateway/core';
import { compareText } from '@gateway/core';

/** What the live description does to the tools of the publication in use. */
export interface DriftComparison {
  /** Tools that must stop being callable, with the sentence `tools/call` reports. */
  blocked: Map<string, string>;
  /** Operations of the live description the publication does not offer (nothing to block; a reviewer decides). */
  added: string[];
  changed: Array<{ tool: string; from: string; to: string }>;
  removed: string[];
}

type Fingerprinted = Pick<Operation, 'tool' | 'fingerprint'>;

/** `sha256:0123456789ab…`: enough to tell fingerprints apart in a sentence. */
export function shortFingerprint(fingerprint: string): string {
  const [algorithm, hex] = fingerprint.includes(':') ? fingerprint.split(':', 2) : ['', fingerprint];
  const short = hex!.length > 12 ? `${hex!.slice(0, 12)}…` : hex!;
  return algorithm ? `${algorithm}:${short}` : short;
}

/**
 * Compares the tools a publication offers with the operations of the live description.
 *
 * A tool is matched by name; its fingerprint covers everything that determines the request, so an equal
 * fingerprint means the frozen request is still what the API describes and the tool keeps working.
 * A tool whose name vanished but whose exact request is still described under another name (an
 * operationId rename) is unchanged too: the request it sends is still the described one.
 * A changed fingerprint or a vanished operation blocks the tool until the description matches again or
 * a new publication is approved. `added` lists live operations the publication does not hold at all.
 */
export function compareWithPublication(
  published: readonly Fingerprinted[],
  live: readonly Fingerprinted[],
  /**
   * What the publication records of the operations it does not offer (`notOffered`): `added` excludes those that
   * are still the same operation (same fingerprint); one that changed since is listed for a person to look at.
   */
  knownOperations: readonly Fingerprinted[] = [],
): DriftComparison {
  const liveByTool = new Map(live.map((operation) => [operation.tool, operation]));
  const liveFingerprints = new Set(live.map((operation) => operation.fingerprint));
  const publishedTools = new Set(published.map((operation) => operation.tool));
  const leftOut = new Map(knownOperations.map((operation) => [operation.tool, operation.fingerprint]));
  const blocked = new Map<string, string>();
  const changed: DriftComparison['changed'] = [];
  const removed: string[] = [];
  for (const operation of [...published].sort((a, b) => compareText(a.tool, b.tool))) {
    const current = liveByTool.get(operation.tool);
    if (current?.fingerprint === operation.fingerprint) continue;
    if (liveFingerprints.has(operation.fingerprint)) continue;
    if (current) {
      changed.push({ tool: operation.tool, from: operation.fingerprint, to: current.fingerprint });
      blocked.set(
        operation.tool,
        `operation changed in the live description ` +
          `(fingerprint ${shortFingerprint(operation.fingerprint)} → ${shortFingerprint(current.fingerprint)})`,
      );
    } else {
      removed.push(operation.tool);
      blocked.set(operation.tool, 'operation removed from the live description');
    }
  }
  const added = live
    .filter((operation) => !publishedTools.has(operation.tool) && leftOut.get(operation.tool) !== operation.fingerprint)
    .map((operation) => operation.tool)
    .sort(compareText);
  return { blocked, added, changed, removed };
}
