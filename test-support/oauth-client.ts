/**
 * An MCP client's OAuth state kept in memory, as a desktop client keeps it on disk: the `authProvider` of the
 * tests' real SDK clients. One class for both SDK lines (1.x `OAuthClientProvider` and 2.x): their interfaces
 * agree on every member used here, and both accept this shape.
 */
export class MemoryOAuthClientProvider {
  /** Where the SDK sent the person to sign in (a test opens it in a browser). */
  authorizationUrl: URL | undefined;
  private information: unknown;
  private savedTokens: unknown;
  private verifier = '';
  private discovery: unknown;

  /**
   * `clientMetadataUrl`: a Client ID Metadata Document the 2.x SDK uses as its client id; without it, the
   * client registers dynamically (RFC 7591).
   */
  constructor(
    readonly redirectUrl: string,
    private readonly clientName: string,
    readonly clientMetadataUrl?: string,
  ) {}

  get clientMetadata() {
    return {
      client_name: this.clientName,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.information as never;
  }
  saveClientInformation(information: unknown) {
    this.information = information;
  }
  tokens() {
    return this.savedTokens as never;
  }
  saveTokens(tokens: unknown) {
    this.savedTokens = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  discoveryState() {
    return this.discovery as never;
  }
  saveDiscoveryState(state: unknown) {
    this.discovery = state;
  }
  invalidateCredentials(scope: string) {
    if (scope === 'all' || scope === 'tokens') this.savedTokens = undefined;
    if (scope === 'all' || scope === 'client') this.information = undefined;
  }
}
