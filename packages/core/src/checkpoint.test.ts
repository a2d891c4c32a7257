import { createHash, generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  formatCheckpoint,
  noteKeyId,
  parseCheckpoint,
  parseVerifierKey,
  rawPublicKey,
  signNote,
  verifierKey,
  verifyNote,
} from './checkpoint.js';

const { privateKey } = generateKeyPairSync('ed25519');
const publicKey = rawPublicKey(privateKey);
const origin = 'gateway.example.com/receipts';
const body = formatCheckpoint({ origin, size: 42, rootHash: createHash('sha256').update('root').digest() });

describe('C2SP tlog-checkpoint and signed-note', () => {
  it('a checkpoint body is origin, size and base64 root, each on its own line', () => {
    expect(body.split('\n')).toEqual([origin, '42', createHash('sha256').update('root').digest('base64'), '']);
    expect(parseCheckpoint(body)).toMatchObject({ origin, size: 42 });
    expect(parseCheckpoint('x\n01\nAAAA\n')).toBeUndefined();
  });

  it('the key ID is the first 4 bytes of SHA-256(name || 0x0A || 0x01 || public key)', () => {
    const expected = createHash('sha256')
      .update(Buffer.concat([Buffer.from(`${origin}\n`), Buffer.from([1]), publicKey]))
      .digest()
      .subarray(0, 4);
    expect(noteKeyId(origin, publicKey).equals(expected)).toBe(true);
    expect(parseVerifierKey(verifierKey(origin, publicKey))?.publicKey.equals(publicKey)).toBe(true);
  });

  it('a signed note verifies with its key and not after any change', () => {
    const note = signNote(body, origin, privateKey);
    expect(note.startsWith(`${body}\n\u2014 ${origin} `)).toBe(true);
    expect(verifyNote(note, origin, publicKey)).toBe(body);
    expect(verifyNote(note.replace('\n42\n', '\n43\n'), origin, publicKey)).toBeUndefined();
    expect(verifyNote(note, origin, rawPublicKey(generateKeyPairSync('ed25519').privateKey))).toBeUndefined();
  });
});
