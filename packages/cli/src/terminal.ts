import { GatewayError, type ErrorCode } from '@gateway/core';

/**
 * Reads one line per prompt from the terminal with echo off (raw mode: nothing is written back), so a
 * secret typed by a person never shows on screen or in a scrollback. Input that arrives in one burst (a paste,
 * or several lines at once) is split on line ends, so no line is lost between prompts. Ctrl+C cancels with
 * `cancelCode`; Ctrl+D ends the current line early (as Enter does).
 */
export function readHiddenLines(prompts: string[], cancelCode: ErrorCode): Promise<string[]> {
  const stdin = process.stdin;
  const lines: string[] = [];
  let value = '';
  return new Promise((resolve, reject) => {
    // Echo goes off before the prompt appears: a person (or a paste) quick enough to type right after it would
    // otherwise see the first characters of the secret written back.
    stdin.setRawMode(true);
    stdin.setEncoding('utf8');
    stdin.resume();
    process.stderr.write(prompts[0] ?? '');
    const finish = (error?: Error): void => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.removeListener('data', onData);
      if (error) reject(error);
      else resolve(lines);
    };
    const onData = (text: string): void => {
      for (const character of text) {
        if (character === '\r' || character === '\n' || character === '\u0004') {
          process.stderr.write('\n');
          lines.push(value);
          value = '';
          if (lines.length === prompts.length) {
            finish();
            return;
          }
          process.stderr.write(prompts[lines.length]!);
        } else if (character === '\u0003') {
          process.stderr.write('\n');
          finish(new GatewayError(cancelCode, 'cancelled'));
          return;
        } else if (character === '\u007f' || character === '\b') value = value.slice(0, -1);
        else value += character;
      }
    };
    stdin.on('data', onData);
  });
}
