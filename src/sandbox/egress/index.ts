export {
  EgressProxy,
  DEFAULT_EGRESS_CAPS,
  type BlockedRequest,
  type EgressCaps,
  type EgressProxyOptions,
} from './proxy.js';
export {
  REGISTRY_HOSTS,
  admits,
  normalizeHost,
  parseAllowEntry,
  registriesAllow,
  type AllowEntry,
  type EgressPolicy,
} from './allowlist.js';
export { addressChecker, hostAddresses, type AddressCheck } from './addresses.js';
export { dnsResolver, type ResolveHost } from './resolve.js';
export {
  effectiveEgressPolicy,
  fleetSetupNetworkFromEnv,
  type FleetSetupNetwork,
  type RepoSetupNetwork,
  type SetupNetworkMode,
} from './policy.js';
export {
  EGRESS_DIR_INSIDE,
  EGRESS_PROXY_URL,
  EGRESS_SOCKET_INSIDE,
  egressGrant,
  forwardedArgv,
  NO_NETWORK_NOTE,
  openEgress,
  proxyEnv,
  runWithEgress,
  type EgressGrant,
  type EgressSession,
} from './session.js';
