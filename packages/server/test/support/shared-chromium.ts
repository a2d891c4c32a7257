/**
 * One headless Chromium that a test and the processes it starts share, as a person's one browser: started with a
 * DevTools endpoint, which chromium-browser.mjs (the `BROWSER` an MCP client such as mcp-remote runs to open a
 * URL) connects to. Its default context keeps the cookies between openings.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The `BROWSER` executable: opens a URL in the shared Chromium and goes through the pages it meets. */
export const BROWSER_SCRIPT = fileURLToPath(new URL('./chromium-browser.mjs', import.meta.url));

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--remote-debugging-address=127.0.0.1',
  '--remote-debugging-port=0',
];

export interface OpenedPage {
  url: string;
  heading: string;
  visited: string[];
}

export interface SharedChromium {
  /** The DevTools WebSocket endpoint (`CHROMIUM_TEST_CDP`). */
  endpoint: string;
  /** The environment chromium-browser.mjs needs, as `account` at the providers. */
  env(account: string): Record<string, string>;
  /**
   * Opens a URL as a person would (chromium-browser.mjs): in the default context, or a new one (`fresh`: no one
   * signed in). The final page's URL and heading, and every URL it went through.
   */
  open(url: string, options: { account: string; fresh?: boolean }): Promise<OpenedPage>;
  close(): Promise<void>;
}

export async function startSharedChromium(profileDirectory: string, logFile: string): Promise<SharedChromium> {
  const child: ChildProcess = spawn('/usr/bin/chromium', [...ARGS, `--user-data-dir=${profileDirectory}`, 'about:blank'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const endpoint = await new Promise<string>((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`Chromium gave no DevTools endpoint:\n${text}`)), 30_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const found = /DevTools listening on (ws:\/\/\S+)/.exec(text);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]!);
      }
    });
    child.once('exit', (code) => reject(new Error(`Chromium exited ${code}:\n${text}`)));
  });
  child.stderr!.resume();
  const env = (account: string) => ({ CHROMIUM_TEST_CDP: endpoint, CHROMIUM_TEST_ACCOUNT: account, CHROMIUM_TEST_LOG: logFile });
  return {
    endpoint,
    env,
    open(url, options) {
      return new Promise((resolve, reject) => {
        execFile(
          process.execPath,
          [BROWSER_SCRIPT, url],
          { env: { ...process.env, ...env(options.account), ...(options.fresh ? { CHROMIUM_TEST_FRESH: '1' } : {}) }, timeout: 60_000 },
          (error, stdout, stderr) => {
            if (error) reject(new Error(`${BROWSER_SCRIPT} ${url}: ${error.message}\n${stderr}`));
            else resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as OpenedPage);
          },
        );
      });
    },
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
