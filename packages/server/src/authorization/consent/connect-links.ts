import type { PersonLogins } from '../../credentials/person/index.js';
import type { ConsentTool } from './consent-tool.js';
import type { ConnectLink } from './pages.js';

/** What the consent page needs of per-person logins: which the person linked, and where to link the others. */
export type ConsentPersonLogins = Pick<PersonLogins, 'settings' | 'isLinked' | 'connectUrl'>;

/**
 * Per tool name, a "Connect <provider>" link for each per-person login the tool may use that the signed-in
 * person has not linked yet. The links are the person's own (a connect ticket bound to them, with no session yet).
 */
export function connectLinksFor(
  personLogins: ConsentPersonLogins | undefined,
  tools: readonly ConsentTool[],
  person: string,
): Map<string, ConnectLink[]> {
  const links = new Map<string, ConnectLink[]>();
  if (!personLogins || personLogins.settings.size === 0) return links;
  const made = new Map<string, ConnectLink>();
  for (const tool of tools) {
    const wanted: ConnectLink[] = [];
    for (const login of tool.logins) {
      const settings = personLogins.settings.get(login);
      if (!settings || personLogins.isLinked(person, login)) continue;
      let link = made.get(login);
      if (!link) {
        link = { label: settings.label, href: personLogins.connectUrl({ person, login, session: null }) };
        made.set(login, link);
      }
      wanted.push(link);
    }
    if (wanted.length > 0) links.set(tool.name, wanted);
  }
  return links;
}
