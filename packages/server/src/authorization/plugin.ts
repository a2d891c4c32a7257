import type { FastifyPluginAsync } from 'fastify';
import { registerAuthorizationEndpoint } from './handlers/authorize.js';
import { createBrowserFlow } from './handlers/browser-flow.js';
import { registerConnectEndpoints } from './handlers/connect.js';
import { registerConsentEndpoint } from './handlers/consent.js';
import type { AuthorizationDependencies } from './handlers/dependencies.js';
import { registerMetadataEndpoints } from './handlers/metadata.js';
import { registerRegistrationEndpoint } from './handlers/register.js';
import { registerRevocationEndpoint } from './handlers/revoke.js';
import { registerOidcSignInEndpoints } from './handlers/signin-oidc.js';
import { registerSignInEndpoint } from './handlers/signin.js';
import { registerTokenEndpoint } from './handlers/token.js';
import { addFormParser, answerDatabaseBusy } from './oauth/http.js';

/** The authorization server's endpoints, one handler file each (handlers/), on one Fastify plugin. */
export function authorizationServerPlugin(dependencies: AuthorizationDependencies): FastifyPluginAsync {
  return async (instance) => {
    addFormParser(instance);
    answerDatabaseBusy(instance);
    // OAuth endpoints clients call directly.
    registerMetadataEndpoints(instance, dependencies);
    registerRegistrationEndpoint(instance, dependencies);
    registerTokenEndpoint(instance, dependencies);
    registerRevocationEndpoint(instance, dependencies);
    // The browser's way through /authorize, sign-in and consent, sharing its pending requests.
    const flow = createBrowserFlow(dependencies);
    registerAuthorizationEndpoint(instance, dependencies, flow);
    registerSignInEndpoint(instance, dependencies, flow);
    if (dependencies.oidc) registerOidcSignInEndpoints(instance, dependencies, dependencies.oidc, flow);
    registerConsentEndpoint(instance, dependencies, flow);
    registerConnectEndpoints(instance, dependencies, flow);
  };
}
