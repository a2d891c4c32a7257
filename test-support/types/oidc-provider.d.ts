// oidc-provider ships no type declarations; tests use it only as a real identity provider.
declare module 'oidc-provider';
