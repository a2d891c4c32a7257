import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  appendLeavesToEdge,
  appendToEdge,
  consistencyProof,
  consistencyProofFromEdge,
  inclusionProof,
  leafHash,
  nodeHash,
  rootOf,
  rootOfEdge,
  verifyConsistency,
  verifyInclusion,
} from './merkle.js';

const leaves = (count: number) => Array.from({ length: count }, (_, index) => leafHash(Buffer.from(`leaf ${index}`)));

describe('RFC 9162 §2.1 Merkle tree', () => {
  it('hashes leaves with the 0x00 prefix and nodes with the 0x01 prefix', () => {
    const data = Buffer.from('receipt');
    expect(
      leafHash(data).equals(
        createHash('sha256')
          .update(Buffer.concat([Buffer.from([0]), data]))
          .digest(),
      ),
    ).toBe(true);
    const [a, b] = leaves(2) as [Buffer, Buffer];
    expect(
      nodeHash(a, b).equals(
        createHash('sha256')
          .update(Buffer.concat([Buffer.from([1]), a, b]))
          .digest(),
      ),
    ).toBe(true);
  });

  it('the empty tree root is SHA-256 of nothing; a tree of 3 splits at 2', () => {
    expect(rootOf([]).toString('hex')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    const [a, b, c] = leaves(3) as [Buffer, Buffer, Buffer];
    expect(rootOf([a, b, c]).equals(nodeHash(nodeHash(a, b), c))).toBe(true);
  });

  it('the incremental right edge gives the same root as recomputing, at every size', () => {
    const all = leaves(70);
    let edge: Buffer[] = [];
    for (let size = 0; size < all.length; size += 1) {
      edge = appendToEdge(edge, size, all[size]!);
      expect(rootOfEdge(edge).equals(rootOf(all.slice(0, size + 1)))).toBe(true);
      // One stored hash per set bit of the size.
      expect(edge.length).toBe((size + 1).toString(2).replace(/0/g, '').length);
    }
  });

  it('every inclusion proof verifies, and fails for another leaf, index or root', () => {
    const all = leaves(13);
    for (let size = 1; size <= all.length; size += 1) {
      const root = rootOf(all.slice(0, size));
      for (let index = 0; index < size; index += 1) {
        const proof = inclusionProof(all, index, size);
        expect(verifyInclusion(all[index]!, index, size, proof, root)).toBe(true);
        expect(verifyInclusion(leafHash(Buffer.from('other')), index, size, proof, root)).toBe(false);
        if (size > 1) expect(verifyInclusion(all[index]!, (index + 1) % size, size, proof, root)).toBe(false);
      }
    }
  });

  it('every consistency proof verifies, and fails against a changed earlier tree', () => {
    const all = leaves(17);
    for (let second = 1; second <= all.length; second += 1) {
      for (let first = 1; first <= second; first += 1) {
        const proof = consistencyProof(all, first, second);
        const firstRoot = rootOf(all.slice(0, first));
        const secondRoot = rootOf(all.slice(0, second));
        expect(verifyConsistency(first, second, proof, firstRoot, secondRoot)).toBe(true);
        const forged = rootOf([leafHash(Buffer.from('forged')), ...all.slice(1, first)]);
        expect(verifyConsistency(first, second, proof, forged, secondRoot)).toBe(false);
      }
    }
  });

  it("a consistency proof made from the earlier tree's edge and the later leaves equals PROOF(m, D[n]), at every pair of sizes", () => {
    const all = leaves(24);
    for (let second = 1; second <= all.length; second += 1) {
      for (let first = 1; first <= second; first += 1) {
        const edge = appendLeavesToEdge([], 0, all.slice(0, first));
        expect(consistencyProofFromEdge(edge, first, all.slice(first, second))).toEqual(consistencyProof(all, first, second));
      }
    }
  });

  it('appending many leaves at once gives the edge of appending them one by one', () => {
    const all = leaves(41);
    const oneByOne = all.reduce<Buffer[]>((edge, leaf, index) => appendToEdge(edge, index, leaf), []);
    const edge = appendLeavesToEdge(appendLeavesToEdge([], 0, all.slice(0, 13)), 13, all.slice(13));
    expect(edge).toEqual(oneByOne);
  });
});
