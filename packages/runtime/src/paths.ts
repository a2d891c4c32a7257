import { resolveConfigPath, type LoadedConfig } from '@gateway/core';

/** `<dataDirectory>` of the gateway: gateway.dataDirectory, default `.gateway` beside gateway.yaml. */
export function gatewayDataDirectory(loaded: LoadedConfig): string {
  return resolveConfigPath(loaded, loaded.config.gateway.dataDirectory ?? '.gateway');
}

/** The people file: auth.local.file, default `<dataDirectory>/people.json`. */
export function peopleFilePath(loaded: LoadedConfig): string {
  const file = loaded.config.auth?.local?.file;
  return file ? resolveConfigPath(loaded, file) : resolveConfigPath(loaded, `${gatewayDataDirectory(loaded)}/people.json`);
}

/** The SQLite database sessions live in (the same file the server opens). */
export function gatewayDatabasePath(loaded: LoadedConfig): string {
  return `${gatewayDataDirectory(loaded)}/gateway.db`;
}
