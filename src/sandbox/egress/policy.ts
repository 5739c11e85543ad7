import { parseAllowEntry, registriesAllow, type EgressPolicy } from './allowlist.js';

/** How much network a repository's setup commands ask for (`setup.network` in .github/frognano.yml). */
export type SetupNetworkMode = 'off' | 'registries' | 'all';

export interface RepoSetupNetwork {
  mode: SetupNetworkMode;
  /** Allow entries on top of the registries (`setup.network.allow`). */
  allow: string[];
}

/** The fleet's side: the most any repository gets (`FROGNANO_SETUP_NETWORK`) and entries every repository gets. */
export interface FleetSetupNetwork {
  ceiling: SetupNetworkMode;
  allow: string[];
}

const RANK: Record<SetupNetworkMode, number> = { off: 0, registries: 1, all: 2 };

/**
 * FROGNANO_SETUP_NETWORK (`registries` default, `all`, `off`) and FROGNANO_SETUP_ALLOW (comma-separated allow
 * entries). Invalid values throw with the variable's name.
 */
export function fleetSetupNetworkFromEnv(env: NodeJS.ProcessEnv = process.env): FleetSetupNetwork {
  const raw = (env.FROGNANO_SETUP_NETWORK ?? '').trim().toLowerCase() || 'registries';
  if (!(raw in RANK)) throw new Error(`FROGNANO_SETUP_NETWORK=${raw} is not one of registries, all, off`);
  const allow = (env.FROGNANO_SETUP_ALLOW ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  for (const e of allow) {
    try {
      parseAllowEntry(e);
    } catch (err) {
      throw new Error(`FROGNANO_SETUP_ALLOW: ${(err as Error).message}`);
    }
  }
  return { ceiling: raw as SetupNetworkMode, allow };
}

/**
 * What the egress proxy enforces for one repository: the lower of its mode and the fleet's ceiling, the registries
 * plus the fleet's and the repository's entries. Undefined: its setup commands get no network at all.
 */
export function effectiveEgressPolicy(repo: RepoSetupNetwork, fleet: FleetSetupNetwork): EgressPolicy | undefined {
  const mode = RANK[repo.mode] <= RANK[fleet.ceiling] ? repo.mode : fleet.ceiling;
  if (mode === 'off') return undefined;
  return {
    mode,
    allow: [...registriesAllow(), ...[...fleet.allow, ...repo.allow].map((e) => parseAllowEntry(e))],
  };
}
