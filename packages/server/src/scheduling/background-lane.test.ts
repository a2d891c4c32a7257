import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { backgroundTurn, MAX_WAITING, runInBackground } from './background-lane.js';

/** Resolves in the next check phase of the event loop, after the lane's turn when that was queued first. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Resolves once `predicate` holds, checking every turn, or fails after `ms`. */
async function until(predicate: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await nextTurn();
  }
}

describe('the background lane', () => {
  let server: Server | undefined;
  let socket: Socket | undefined;
  afterEach(async () => {
    socket?.destroy();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
    socket = undefined;
  });

  it('runs tasks on a later turn of the event loop, in the order they were queued', async () => {
    const ran: number[] = [];
    for (const index of [1, 2, 3]) runInBackground(() => ran.push(index));
    expect(ran).toEqual([]);
    await until(() => ran.length === 3);
    expect(ran).toEqual([1, 2, 3]);
  });

  it('runs one task per turn: a request that arrives while tasks wait is served after one of them, not all', async () => {
    // What the lane is for: a client's next call must not wait for the previous calls' receipts, events and log
    // lines. A plain setImmediate per task runs all 40 before the event loop next reads a socket.
    let tasksRun = 0;
    let tasksRunWhenServed: number | undefined;
    server = createServer((_request, response) => {
      tasksRunWhenServed = tasksRun;
      response.end('ok');
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    socket = connect(port, '127.0.0.1');
    await new Promise((resolve) => socket!.once('connect', resolve));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk));
    // The connection is accepted on the server's side before the tasks are queued (a turn or two later).
    await nextTurn();
    await nextTurn();

    // The first task sends the request (written at once on a connected socket: in the kernel when write
    // returns), so it arrives while the other 39 wait.
    runInBackground(() => {
      socket!.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
      tasksRun += 1;
    });
    for (let index = 1; index < 40; index += 1) runInBackground(() => (tasksRun += 1));

    await until(() => tasksRun === 40 && answer.includes('ok'));
    expect(tasksRunWhenServed).toBeDefined();
    expect(tasksRunWhenServed!).toBeLessThanOrEqual(2);
  });

  it(`keeps at most ${MAX_WAITING} tasks waiting: a turn runs enough of them to come back to that bound`, async () => {
    const ran: number[] = [];
    const queued = MAX_WAITING + 100;
    for (let index = 0; index < queued; index += 1) runInBackground(() => ran.push(index));
    // Queued after the lane's turn, in the same phase of the loop: runs right after that one turn.
    await nextTurn();
    expect(ran.length).toBe(queued - MAX_WAITING);
    await until(() => ran.length === queued);
    expect(ran).toEqual(Array.from({ length: queued }, (_, index) => index));
  });

  it('resolves a background turn in the order of the tasks around it', async () => {
    const order: string[] = [];
    runInBackground(() => order.push('before'));
    const turn = backgroundTurn().then(() => order.push('turn'));
    runInBackground(() => order.push('after'));
    await turn;
    await until(() => order.length === 3);
    expect(order).toEqual(['before', 'turn', 'after']);
  });

  it('goes on with the tasks behind one that throws, and the error is uncaught as from setImmediate', () => {
    // In a process of its own (an uncaught exception would end this test run): the built module, as served.
    const built = new URL('../../dist/scheduling/background-lane.js', import.meta.url);
    const script = `
      import { runInBackground } from ${JSON.stringify(built.href)};
      process.on('uncaughtException', (error) => console.log('uncaught: ' + error.message));
      runInBackground(() => console.log('first'));
      runInBackground(() => { throw new Error('boom'); });
      runInBackground(() => console.log('third'));
    `;
    const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('.', import.meta.url)),
      encoding: 'utf8',
    });
    expect(output.trim().split('\n')).toEqual(['first', 'uncaught: boom', 'third']);
  });
});
