/**
 * `bench/ab.mjs --instructions` reads a gateway's instructions per call from callgrind (bench/support.mjs:
 * callgrindFork, callgrindCounter). This runs a small Node process the same way, instrumentation off until the
 * counter starts, and checks that what the counter reads is the work done between start and read: twice the work
 * counts about twice the instructions, and the same work counts the same within a few percent, however busy the
 * machine is. Needs valgrind (Debian's `valgrind` package); skipped without it.
 */
import { execFileSync, fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../..', import.meta.url));

function hasCallgrind(): boolean {
  try {
    execFileSync('callgrind_control', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

interface Counter {
  start(): void;
  read(): number;
  stop(): void;
}
interface BenchSupport {
  callgrindFork(): { execPath: string; execArgv: string[]; directory: string };
  callgrindCounter(pid: number, directory: string): Counter;
}

describe.skipIf(!hasCallgrind())('bench instruction counter (callgrind)', () => {
  const stops: Array<() => void> = [];
  afterAll(() => {
    for (const stop of stops) stop();
  });

  it('counts the work between start and read: twice the work about twice the count, the same work the same count', async () => {
    const support = (await import(pathToFileURL(join(root, 'bench', 'support.mjs')).href)) as BenchSupport;
    const callgrind = support.callgrindFork();
    // A child that, asked for n, sums n numbers and answers: the work is proportional to n and nothing else.
    const script = join(callgrind.directory, 'work.mjs');
    writeFileSync(
      script,
      [
        "process.on('message', (n) => {",
        '  let sum = 0;',
        '  for (let index = 0; index < n; index += 1) sum += (index * 7) % 13;',
        '  process.send(sum);',
        '});',
        "process.send('ready');",
        "process.once('disconnect', () => process.exit(0));",
      ].join('\n'),
    );
    const child = fork(script, [], { execPath: callgrind.execPath, execArgv: callgrind.execArgv, stdio: 'ignore' });
    stops.push(() => child.kill());
    const next = () => new Promise((answer) => child.once('message', answer));
    await next();
    const work = async (n: number) => {
      child.send(n);
      await next();
    };
    // Optimised before anything is counted (V8 compiles on other threads, which callgrind counts too).
    for (let round = 0; round < 10; round += 1) await work(1_000_000);
    const counter = support.callgrindCounter(child.pid!, callgrind.directory);
    const counts: number[] = [];
    counter.start();
    for (const n of [1_000_000, 2_000_000, 1_000_000]) {
      await work(n);
      counts.push(counter.read());
    }
    counter.stop();
    const [once, twice, again] = counts as [number, number, number];
    expect(once).toBeGreaterThan(1_000_000);
    expect(twice / once).toBeGreaterThan(1.8);
    expect(twice / once).toBeLessThan(2.2);
    expect(Math.abs(again / once - 1)).toBeLessThan(0.05);
  }, 300_000);
});
