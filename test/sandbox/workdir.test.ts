import { DockerSandboxConfigSchema } from '../../src/sandbox/index.js';
import { containerOptions } from '../../src/sandbox/docker/containerSpec.js';

// The docker sandbox's workdir: /workspace by default, a benchmark image's own repository path when configured
// (frognano eval: SWE-bench's /testbed), never a system directory or one the sandbox mounts itself.
describe('docker sandbox workdir', () => {
  test('defaults to /workspace; the container mounts the workspace and starts there', () => {
    const cfg = DockerSandboxConfigSchema.parse({ kind: 'docker' });
    expect(cfg.workdir).toBe('/workspace');
    const testbed = DockerSandboxConfigSchema.parse({ kind: 'docker', workdir: '/testbed' });
    const spec = containerOptions(testbed, '/host/ws', { uid: 1000, gid: 1000, restore: async () => {} });
    expect(spec.WorkingDir).toBe('/testbed');
    expect(spec.HostConfig?.Mounts).toEqual([
      { Type: 'bind', Source: '/host/ws', Target: '/testbed', ReadOnly: false },
    ]);
  });

  test.each(['/tmp', '/etc', '/home', '/usr', '/proc', '/', 'testbed', '/a/b', '/..', '/testbed/', '/a b'])(
    'refuses %s',
    (workdir) => {
      expect(DockerSandboxConfigSchema.safeParse({ kind: 'docker', workdir }).success).toBe(false);
    },
  );
});
