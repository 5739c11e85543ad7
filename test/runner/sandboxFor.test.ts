import { parseRepoConfig } from '../../src/github/repoConfig.js';
import { sandboxFor } from '../../src/runner/jobSupport.js';
import { SandboxConfigSchema } from '../../src/sandbox/index.js';

describe('sandboxFor', () => {
  const repoImage = parseRepoConfig('sandboxImage: ghcr.io/acme/py-sandbox:1\n');
  const noImage = parseRepoConfig('');

  it("uses the repository's image for docker, keeps the runner's limits and labels the job", () => {
    const base = SandboxConfigSchema.parse({
      kind: 'docker',
      image: 'frognano-sandbox:latest',
      memoryMb: 2048,
      labels: { team: 'a' },
    });
    const cfg = sandboxFor(base, repoImage, 'octo/hello#1@2');
    expect(cfg).toMatchObject({
      kind: 'docker',
      image: 'ghcr.io/acme/py-sandbox:1',
      memoryMb: 2048,
      labels: { team: 'a', 'dev.frognano.job': 'octo/hello#1@2' },
    });
    expect(sandboxFor(base, noImage, 'j')).toMatchObject({ image: 'frognano-sandbox:latest' });
  });

  it('passes the image to the docker half of auto, and leaves bwrap alone', () => {
    const auto = SandboxConfigSchema.parse({ kind: 'auto' });
    expect(sandboxFor(auto, repoImage, 'j')).toMatchObject({
      kind: 'auto',
      docker: { image: 'ghcr.io/acme/py-sandbox:1', labels: { 'dev.frognano.job': 'j' } },
    });
    const bwrap = SandboxConfigSchema.parse({ kind: 'bwrap' });
    expect(sandboxFor(bwrap, repoImage, 'j')).toEqual(bwrap);
  });
});
