/**
 * The allowlist as configured: the registries by default, `setup.network.allow` per repository,
 * FROGNANO_SETUP_ALLOW per fleet, `setup.network: all`, and FROGNANO_SETUP_NETWORK as the fleet's ceiling.
 */
import { parseRepoConfig, RepoConfigError } from '../../../src/github/repoConfig.js';
import {
  admits,
  effectiveEgressPolicy,
  fleetSetupNetworkFromEnv,
  parseAllowEntry,
  REGISTRY_HOSTS,
} from '../../../src/sandbox/egress/index.js';

const repo = (yaml: string) => parseRepoConfig(yaml).setup.network;
const fleet = (env: Record<string, string> = {}) => fleetSetupNetworkFromEnv(env);

describe('setup.network in .github/frognano.yml', () => {
  it.each([
    ['', { mode: 'off', allow: [] }],
    ['setup:\n  network: false\n', { mode: 'off', allow: [] }],
    ['setup:\n  network: true\n', { mode: 'registries', allow: [] }],
    ['setup:\n  network: registries\n', { mode: 'registries', allow: [] }],
    ['setup:\n  network: all\n', { mode: 'all', allow: [] }],
    [
      'setup:\n  network:\n    allow: [downloads.example.com, "*.cdn.example.org", "https://ex.com/dist/"]\n',
      { mode: 'registries', allow: ['downloads.example.com', '*.cdn.example.org', 'https://ex.com/dist/'] },
    ],
  ])('reads %j', (yaml, want) => {
    expect(repo(yaml)).toEqual(want);
  });

  it.each(['10.0.0.1', 'http://x@y.com/', 'a b', '*', 'ftp://x.com/', 'x.com:0', 'x.com/path'])(
    'refuses the allow entry %j',
    (entry) => {
      expect(() => repo(`setup:\n  network:\n    allow: [${JSON.stringify(entry)}]\n`)).toThrow(RepoConfigError);
    },
  );

  it('names a typo inside setup.network', () => {
    expect(() => repo('setup:\n  network:\n    alow: [x.com]\n')).toThrow(RepoConfigError);
    expect(() => repo('setup:\n  network: everything\n')).toThrow(RepoConfigError);
  });
});

describe('the fleet: FROGNANO_SETUP_NETWORK and FROGNANO_SETUP_ALLOW', () => {
  it('defaults to the registries ceiling and no extra entries', () => {
    expect(fleet()).toEqual({ ceiling: 'registries', allow: [] });
    expect(fleet({ FROGNANO_SETUP_NETWORK: 'ALL', FROGNANO_SETUP_ALLOW: ' a.com, *.b.org ,' })).toEqual({
      ceiling: 'all',
      allow: ['a.com', '*.b.org'],
    });
  });

  it('names the variable of an invalid value', () => {
    expect(() => fleet({ FROGNANO_SETUP_NETWORK: 'some' })).toThrow(/FROGNANO_SETUP_NETWORK=some/);
    expect(() => fleet({ FROGNANO_SETUP_ALLOW: 'a.com,169.254.169.254' })).toThrow(/FROGNANO_SETUP_ALLOW: .*169/);
  });
});

describe('the effective policy', () => {
  const req = (host: string, port = 443, path?: string) => ({ host, port, path });

  it('gives a repository with setup.network: true the registries, and nothing else', () => {
    const p = effectiveEgressPolicy(repo('setup:\n  network: true\n'), fleet())!;
    expect(p.mode).toBe('registries');
    for (const h of ['registry.npmjs.org', 'files.pythonhosted.org', 'static.crates.io', 'proxy.golang.org']) {
      expect(REGISTRY_HOSTS).toContain(h);
      expect(admits(p, req(h))).toBeUndefined();
    }
    expect(admits(p, req('github.com'))).toBe('not on the allowlist');
    expect(admits(p, req('registry.npmjs.org', 22))).toBe('port not allowed');
  });

  it("adds the repository's and the fleet's entries", () => {
    const p = effectiveEgressPolicy(
      repo('setup:\n  network:\n    allow: ["*.example.com", "files.example.org:8443"]\n'),
      fleet({ FROGNANO_SETUP_ALLOW: 'mirror.corp.example' }),
    )!;
    expect(admits(p, req('a.example.com'))).toBeUndefined();
    expect(admits(p, req('files.example.org', 8443))).toBeUndefined();
    expect(admits(p, req('files.example.org', 443))).toBe('port not allowed');
    expect(admits(p, req('mirror.corp.example', 80))).toBeUndefined();
    expect(admits(p, req('pypi.org'))).toBeUndefined();
  });

  it('lets setup.network: all reach any host on 80/443 only under an `all` ceiling', () => {
    const all = repo('setup:\n  network: all\n');
    expect(effectiveEgressPolicy(all, fleet())!.mode).toBe('registries');
    const p = effectiveEgressPolicy(all, fleet({ FROGNANO_SETUP_NETWORK: 'all' }))!;
    expect(admits(p, req('anything.example'))).toBeUndefined();
    expect(admits(p, req('anything.example', 25))).toBe('port not allowed');
  });

  it('gives no network when the repository or the fleet says off', () => {
    expect(effectiveEgressPolicy(repo(''), fleet({ FROGNANO_SETUP_NETWORK: 'all' }))).toBeUndefined();
    expect(effectiveEgressPolicy(repo('setup:\n  network: all\n'), fleet({ FROGNANO_SETUP_NETWORK: 'off' }))).toBe(
      undefined,
    );
  });

  it('reads a path-prefix entry as that prefix for plain HTTP and the whole host for CONNECT', () => {
    const p = { mode: 'registries' as const, allow: [parseAllowEntry('https://ex.com/dist/')] };
    expect(admits(p, req('ex.com', 443))).toBeUndefined();
    expect(admits(p, req('ex.com', 80, '/dist/a.tgz'))).toBe('port not allowed');
    const h = { mode: 'registries' as const, allow: [parseAllowEntry('http://ex.com/dist/')] };
    expect(admits(h, req('ex.com', 80, '/dist/a.tgz'))).toBeUndefined();
    expect(admits(h, req('ex.com', 80, '/other'))).toBe('not on the allowlist');
  });
});
