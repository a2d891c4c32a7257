/**
 * What the gateway must close when it stops (or when starting fails half-way), closed in the reverse order it
 * was opened: what was started last depends on what was started before it.
 */
export class Closers {
  private readonly closers: Array<() => Promise<void> | void> = [];

  add(close: () => Promise<void> | void): void {
    this.closers.push(close);
  }

  /** Closes everything, last opened first; one failure does not keep the others open. */
  async closeAll(): Promise<void> {
    for (const close of this.closers.splice(0).reverse()) await Promise.resolve(close()).catch(() => undefined);
  }
}
