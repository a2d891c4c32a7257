/**
 * Orders strings by UTF-16 code unit, the same on every machine and in every locale (`localeCompare` is
 * neither). Everything the gateway writes sorted (tools.lock, the vault file, the people file, reports) uses it,
 * so the same input gives the same bytes everywhere: the lock's determinism depends on it.
 */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
