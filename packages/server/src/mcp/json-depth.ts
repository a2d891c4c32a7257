/**
 * The deepest nesting of arrays and objects in a JSON text, found without recursion and without parsing.
 * Strings are skipped (brackets inside them do not count); the text need not be valid JSON (JSON.parse runs
 * afterwards and reports that). Stops as soon as `limit` is exceeded, so hostile input costs one pass at most.
 */
export function exceedsJsonDepth(text: string, limit: number): boolean {
  let depth = 0;
  let isInString = false;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (isInString) {
      if (code === 0x5c /* \ */) index += 1;
      else if (code === 0x22 /* " */) isInString = false;
      continue;
    }
    if (code === 0x22) isInString = true;
    else if (code === 0x5b /* [ */ || code === 0x7b /* { */) {
      depth += 1;
      if (depth > limit) return true;
    } else if (code === 0x5d /* ] */ || code === 0x7d /* } */) depth -= 1;
  }
  return false;
}
