/**
 * The one redaction mechanism both source kinds use (the OpenAPI executor's responses, an MCP source's
 * results, errors and stderr). End-to-end proofs: packages/server/src/execute/executor.test.ts (OpenAPI) and
 * packages/server/test/mcp-redaction.e2e.test.ts (MCP sources over stdio and Streamable HTTP).
 */
import { describe, expect, it } from 'vitest';
import {
  bytesContainSecret,
  jsonTextContainsSecret,
  MIN_SECRET_LENGTH,
  NO_SECRETS,
  redactJsonValue,
  redactText,
  secretForms,
  textContainsSecret,
} from './redaction.js';

describe('secret forms', () => {
  it(`values shorter than ${MIN_SECRET_LENGTH} characters are not searched for; ${MIN_SECRET_LENGTH} and longer are`, () => {
    expect(MIN_SECRET_LENGTH).toBe(6);
    expect(secretForms(['12345'])).toBe(NO_SECRETS);
    expect(redactText('pin 12345, key 123456', secretForms(['12345', '123456']))).toBe('pin 12345, key [redacted]');
  });

  it('no values, or only short ones, give NO_SECRETS, which every check passes at once', () => {
    expect(secretForms([])).toBe(NO_SECRETS);
    expect(secretForms(['abc', ''])).toBe(NO_SECRETS);
    expect(redactText('anything', NO_SECRETS)).toBe('anything');
    expect(jsonTextContainsSecret('"anything"', NO_SECRETS)).toBe(false);
    expect(bytesContainSecret(Buffer.from('anything'), NO_SECRETS)).toBe(false);
  });

  it('the same values give the very same forms (computed once per set of values)', () => {
    expect(secretForms(['token-abcdef', 'other-123456'])).toBe(secretForms(['token-abcdef', 'other-123456']));
    expect(secretForms(['token-abcdef'])).not.toBe(secretForms(['token-abcdef', 'other-123456']));
  });

  it('a header value gives its token (Bearer) and its decoded password (Basic) too', () => {
    const bearer = secretForms(['Bearer tok-123456']);
    expect(redactText('got tok-123456', bearer)).toBe('got [redacted]');
    // Only the forms that hold no other are searched first; a longer one found through them is replaced whole.
    expect(bearer.anchors.length).toBeLessThan(bearer.forms.length);
    for (const form of bearer.forms) expect(redactText(`<${form}>`, bearer), form).toBe('<[redacted]>');
    const basic = secretForms([`Basic ${Buffer.from('alice:pa55-word').toString('base64')}`]);
    expect(redactText('alice:pa55-word and pa55-word', basic)).toBe('[redacted] and [redacted]');
  });

  it('every form is redacted: plain, base64, base64url, hex, percent-encoded', () => {
    const secret = 'k3y/With+Special=é~';
    const bytes = Buffer.from(secret);
    const forms = secretForms([secret]);
    for (const form of [secret, bytes.toString('base64'), bytes.toString('base64url'), bytes.toString('hex'), encodeURIComponent(secret)]) {
      expect(redactText(`<${form}>`, forms), form).toBe('<[redacted]>');
    }
  });
});

describe('JSON values', () => {
  const secret = 'quote"back\\slash-secret';
  const forms = secretForms([secret]);

  it("the serialised value's one search finds a secret in any string, even one written JSON-escaped inside a text", () => {
    const escapedInText = { content: [{ type: 'text', text: `{"k":${JSON.stringify(secret)}}` }] };
    const plainInKey = { structuredContent: { [secret]: 1 } };
    for (const value of [escapedInText, plainInKey]) {
      expect(jsonTextContainsSecret(JSON.stringify(value), forms)).toBe(true);
      expect(JSON.stringify(redactJsonValue(value, forms))).not.toContain(JSON.stringify(secret).slice(1, -1));
    }
    expect(jsonTextContainsSecret(JSON.stringify({ content: [{ type: 'text', text: 'nothing here' }] }), forms)).toBe(false);
  });

  it('redacts strings and keys at any depth, leaves other values alone, and keeps a `__proto__` key a key', () => {
    const value = JSON.parse(`{"__proto__":{"a":[1,true,null,"x ${'quote\\"back\\\\slash-secret'} y"]},"n":2}`);
    const redacted = redactJsonValue(value, forms) as Record<string, unknown>;
    expect(Object.getPrototypeOf(redacted)).toBe(Object.prototype);
    expect(Object.hasOwn(redacted, '__proto__')).toBe(true);
    expect(JSON.stringify(redacted)).toBe('{"__proto__":{"a":[1,true,null,"x [redacted] y"]},"n":2}');
  });

  it('bytes are searched for every form (a hex form inside bytes too)', () => {
    const hexInside = Buffer.concat([Buffer.from([0, 255]), Buffer.from(Buffer.from(secret).toString('hex')), Buffer.from([254])]);
    expect(bytesContainSecret(hexInside, forms)).toBe(true);
    expect(bytesContainSecret(new Uint8Array(hexInside), forms)).toBe(true);
    expect(bytesContainSecret(Buffer.from([0, 1, 2]), forms)).toBe(false);
    expect(textContainsSecret('no secret', forms)).toBe(false);
  });
});
