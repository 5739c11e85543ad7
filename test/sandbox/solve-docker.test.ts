/**
 * The Leaf job end to end in the real docker sandbox: a real git repository, scripted model turns (ReplayBackend),
 * the five tools executed in the container, the patch computed inside it, tests run with pytest in the image.
 */
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { ReplayBackend } from '../../src/inference/replay.js';
import { solve } from '../../src/leaf/solve.js';
import { DockerSandbox, reapStaleSandboxes } from '../../src/sandbox/docker/index.js';
import { makeRepo } from '../leaf/helpers.js';
import { dockerForTests, TEST_IMAGE } from './support.js';

const docker = await dockerForTests();
const describeDocker = docker ? describe : describe.skip;
const RUN_LABEL = { 'dev.frognano.test': `solve-docker-${randomUUID()}` };

describeDocker('solve in the docker sandbox', () => {
  let source: string;
  beforeEach(async () => {
    source = await makeRepo({
      'calc.py': 'def add(a, b):\n    return a - b\n',
      'test_calc.py': 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n',
    });
  });
  afterEach(async () => {
    await reapStaleSandboxes(docker!, 0, { labels: RUN_LABEL });
    await rm(source, { recursive: true, force: true });
  });

  it('fixes a bug with the five tools and returns a patch computed in the container', async () => {
    let containerId = '';
    const result = await solve({
      sourceDir: source,
      sandboxFactory: async (dir) => {
        const sb = await DockerSandbox.create(dir, { image: TEST_IMAGE, labels: RUN_LABEL, memoryMb: 512 }, { docker });
        containerId = sb.containerId;
        return sb;
      },
      backend: ReplayBackend.fromTurns([
        {
          content: '',
          tool_calls: [
            { name: 'Read', arguments: { file_path: 'calc.py' } },
            { name: 'Glob', arguments: { pattern: '**/*.py' } },
            {
              name: 'Bash',
              arguments: {
                command:
                  'python3 -m pytest -q 2>&1 | tail -1; id -un; python3 -c "import socket; print(socket.if_nameindex())"',
              },
            },
          ],
        },
        {
          content: '',
          tool_calls: [
            { name: 'Edit', arguments: { file_path: 'calc.py', old_string: 'a - b', new_string: 'a + b' } },
            { name: 'Write', arguments: { file_path: 'NOTES.md', content: 'add() adds now.\n' } },
          ],
        },
        { content: 'Fixed add().' },
      ]),
      task: { title: 'add() subtracts', body: 'add(2, 3) should be 5' },
      testCommands: ['python3 -m pytest -q'],
    });
    const obs = result.trajectory.steps.flatMap((s) => s.observations.map((o) => o.observation));
    expect(obs[0]).toContain('return a - b');
    expect(obs[1]).toContain('calc.py');
    expect(obs[2]).toMatch(/1 failed/);
    expect(obs[2]).toContain('agent');
    expect(obs[2]).toContain("[(1, 'lo')]");
    expect(result.patch).toContain('+    return a + b');
    expect(result.patch).toContain('+++ b/NOTES.md');
    expect(result.changedFiles.map((f) => f.path).sort()).toEqual(['NOTES.md', 'calc.py']);
    expect(result.testResults[0]).toMatchObject({ exitCode: 0 });
    expect(result.testResults[0].outputTail).toMatch(/1 passed/);
    // solve closed the sandbox: the container is gone.
    await expect(docker!.getContainer(containerId).inspect()).rejects.toMatchObject({ statusCode: 404 });
  });
});
