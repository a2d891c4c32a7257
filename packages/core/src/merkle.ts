/**
 * The Merkle tree of the receipt log, as RFC 9162 §2.1 defines it: leaf hash = SHA-256(0x00 || leaf),
 * interior node = SHA-256(0x01 || left || right), the tree of n leaves split at the largest power of two
 * smaller than n. Pure functions over 32-byte hashes; the log keeps the tree incrementally through its
 * right edge (`appendToEdge`), proofs are computed from the leaf hashes.
 */
import { createHash, hash } from 'node:crypto';

const LEAF_PREFIX = Buffer.from([0x00]);
const NODE_PREFIX = Buffer.from([0x01]);

/**
 * RFC 9162 §2.1.1: the hash of a leaf's bytes. A string is hashed as its UTF-8 bytes (the receipt log
 * hashes the leaf's JSON text directly instead of copying it into a Buffer first).
 */
export function leafHash(leaf: Uint8Array | string): Buffer {
  // One-shot hashing (no Hash object per leaf). '\0' is its own UTF-8 byte and pairs with no surrogate, so
  // the text's bytes after it are the text's own UTF-8.
  return hash('sha256', typeof leaf === 'string' ? `\0${leaf}` : Buffer.concat([LEAF_PREFIX, leaf]), 'buffer');
}

/** RFC 9162 §2.1.1: the hash of an interior node. */
export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  return hash('sha256', Buffer.concat([NODE_PREFIX, left, right]), 'buffer');
}

/** The largest power of two strictly smaller than n (n ≥ 2). */
function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** MTH(D[n]) over leaf hashes (RFC 9162 §2.1.1); the empty tree's root is SHA-256 of nothing. */
export function rootOf(leafHashes: readonly Uint8Array[], start = 0, end = leafHashes.length): Buffer {
  const n = end - start;
  if (n === 0) return createHash('sha256').digest();
  if (n === 1) return Buffer.from(leafHashes[start]!);
  const k = splitPoint(n);
  return nodeHash(rootOf(leafHashes, start, start + k), rootOf(leafHashes, start + k, end));
}

/**
 * The right edge of a tree: the roots of its perfect subtrees, largest (leftmost) first, one per set bit
 * of the size. Appending a leaf merges equal-sized subtrees, so the log never recomputes the tree.
 */
export function appendToEdge(edge: readonly Buffer[], size: number, leaf: Buffer): Buffer[] {
  const next = edge.slice();
  let hash = leaf;
  for (let bits = size; bits & 1; bits = Math.floor(bits / 2)) hash = nodeHash(next.pop()!, hash);
  next.push(hash);
  return next;
}

/**
 * `appendToEdge` for many leaves at once (a start folding every stored leaf): one copy of the edge and one
 * scratch buffer for all of them, so the cost is the node hashes alone.
 */
export function appendLeavesToEdge(edge: readonly Buffer[], size: number, leaves: readonly Buffer[]): Buffer[] {
  const next = edge.slice();
  const scratch = Buffer.allocUnsafe(1 + 2 * 32);
  scratch[0] = NODE_PREFIX[0]!;
  for (const leaf of leaves) {
    let node = leaf;
    for (let bits = size; bits & 1; bits = Math.floor(bits / 2)) {
      next.pop()!.copy(scratch, 1);
      node.copy(scratch, 33);
      node = hash('sha256', scratch, 'buffer');
    }
    next.push(node);
    size += 1;
  }
  return next;
}

/** The root of a tree from its right edge (equals rootOf over all its leaves). */
export function rootOfEdge(edge: readonly Buffer[]): Buffer {
  if (edge.length === 0) return createHash('sha256').digest();
  let root = edge[edge.length - 1]!;
  for (let index = edge.length - 2; index >= 0; index -= 1) root = nodeHash(edge[index]!, root);
  return root;
}

/** RFC 9162 §2.1.3.1: PATH(m, D[n]), the inclusion proof of leaf m in the tree of the first n leaves. */
export function inclusionProof(leafHashes: readonly Uint8Array[], m: number, n = leafHashes.length): Buffer[] {
  if (m < 0 || m >= n || n > leafHashes.length) throw new RangeError(`leaf ${m} is not in a tree of ${n} leaves`);
  const path = (index: number, start: number, end: number): Buffer[] => {
    if (end - start <= 1) return [];
    const k = splitPoint(end - start);
    return index < k
      ? [...path(index, start, start + k), rootOf(leafHashes, start + k, end)]
      : [...path(index - k, start + k, end), rootOf(leafHashes, start, start + k)];
  };
  return path(m, 0, n);
}

/** RFC 9162 §2.1.4.1: PROOF(m, D[n]), the consistency proof between the trees of m and n leaves. */
export function consistencyProof(leafHashes: readonly Uint8Array[], m: number, n = leafHashes.length): Buffer[] {
  if (m < 1 || m > n || n > leafHashes.length) throw new RangeError(`no consistency proof from ${m} to ${n} leaves`);
  return subproofOf(m, n, (start, end) => rootOf(leafHashes, start, end));
}

/**
 * PROOF(m, D[n]) from what a log keeps instead of every leaf: the right edge of the tree of m leaves (its
 * perfect subtrees, `appendToEdge`) and the n - m leaf hashes after them. Every node of the proof that lies
 * below m is one of those subtrees (the proof descends along m's binary decomposition), every other node lies
 * entirely at or above m; so a consistency check from a signed size costs the leaves since that size only.
 */
export function consistencyProofFromEdge(edge: readonly Buffer[], m: number, laterLeafHashes: readonly Uint8Array[]): Buffer[] {
  const n = m + laterLeafHashes.length;
  if (m < 1) throw new RangeError(`no consistency proof from ${m} leaves`);
  const subtrees = new Map<string, Buffer>();
  let start = 0;
  for (const [position, bit] of setBitsDescending(m).entries()) {
    const root = edge[position];
    if (!root) throw new RangeError(`the edge of a tree of ${m} leaves has ${setBitsDescending(m).length} subtrees, not ${edge.length}`);
    subtrees.set(`${start}:${start + bit}`, root);
    start += bit;
  }
  return subproofOf(m, n, (from, to) => {
    if (from >= m) return rootOf(laterLeafHashes, from - m, to - m);
    const root = subtrees.get(`${from}:${to}`);
    if (!root) throw new RangeError(`leaves ${from}..${to - 1} are not a subtree of the tree of ${m} leaves`);
    return root;
  });
}

/** The sizes of the perfect subtrees of a tree of n leaves, largest first (its set bits). */
function setBitsDescending(n: number): number[] {
  const bits: number[] = [];
  for (let bit = 2 ** Math.floor(Math.log2(Math.max(n, 1))); bit >= 1; bit /= 2) if (Math.floor(n / bit) % 2 === 1) bits.push(bit);
  return bits;
}

/** SUBPROOF(m, D[0:n], true) of RFC 9162 §2.1.4.1, with the root of a range of leaves from `rangeRoot`. */
function subproofOf(m: number, n: number, rangeRoot: (start: number, end: number) => Buffer): Buffer[] {
  const subproof = (size: number, start: number, end: number, isComplete: boolean): Buffer[] => {
    if (size === end - start) return isComplete ? [] : [rangeRoot(start, end)];
    const k = splitPoint(end - start);
    return size <= k
      ? [...subproof(size, start, start + k, isComplete), rangeRoot(start + k, end)]
      : [...subproof(size - k, start + k, end, false), rangeRoot(start, start + k)];
  };
  return subproof(m, 0, n, true);
}

/** RFC 9162 §2.1.3.2: whether `proof` shows the leaf hash at `index` in the tree of `size` leaves with `root`. */
export function verifyInclusion(leaf: Uint8Array, index: number, size: number, proof: readonly Uint8Array[], root: Uint8Array): boolean {
  if (index >= size || index < 0) return false;
  let fn = index;
  let sn = size - 1;
  let r: Buffer = Buffer.from(leaf);
  for (const p of proof) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && r.equals(root);
}

/** RFC 9162 §2.1.4.2: whether `proof` shows the tree (size1, root1) is a prefix of (size2, root2). */
export function verifyConsistency(
  size1: number,
  size2: number,
  proof: readonly Uint8Array[],
  root1: Uint8Array,
  root2: Uint8Array,
): boolean {
  if (size1 > size2 || size1 < 1) return false;
  if (size1 === size2) return proof.length === 0 && Buffer.from(root1).equals(root2);
  // Step 1: an empty path cannot prove two different trees consistent.
  if (proof.length === 0) return false;
  let path: Buffer[] = proof.map((hash) => Buffer.from(hash));
  // Step 2: when size1 is an exact power of two, the first root is the first element of the path.
  if ((size1 & (size1 - 1)) === 0) path = [Buffer.from(root1), ...path];
  if (path.length === 0) return false;
  let fn = size1 - 1;
  let sn = size2 - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr: Buffer = path[0]!;
  let sr: Buffer = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return fr.equals(root1) && sr.equals(root2) && sn === 0;
}
