import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';

/**
 * SWE-bench-format fixture instances and their images, built locally FROM the sandbox test image with no network:
 * a tiny Python repository at /testbed (committed at a fixed date, so base_commit is the same on every build) with a
 * failing test (FAIL_TO_PASS) and a passing one (PASS_TO_PASS), and an "environment" the activation sources.
 * Images are tagged by the hash of everything that goes into them, so a rerun reuses them.
 */
export const BASE_IMAGE = process.env.FROGNANO_TEST_SANDBOX_IMAGE ?? 'frognano-sandbox:test';

interface FixtureRepo {
  id: string;
  repo: string;
  problem: string;
  files: Record<string, string>;
  failToPass: string[];
  passToPass: string[];
}

export const FIXTURES: FixtureRepo[] = [
  {
    id: 'fixture__calc-1',
    repo: 'fixture/calc',
    problem: 'add() subtracts\nadd(2, 3) returns -1 instead of 5.\n',
    files: {
      'lib.py': 'def add(a, b):\n    return a - b\n\n\ndef double(a):\n    return 2 * a\n',
      'tests/test_lib.py':
        'from lib import add, double\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_double():\n    assert double(2) == 4\n',
    },
    failToPass: ['tests/test_lib.py::test_add'],
    passToPass: ['tests/test_lib.py::test_double'],
  },
  {
    id: 'fixture__strings-2',
    repo: 'fixture/strings',
    problem: 'shout() whispers\nshout("hi") gives "hi!" but should give "HI!".\n',
    files: {
      'lib.py': 'def shout(s):\n    return s.lower() + "!"\n\n\ndef quiet(s):\n    return s.lower()\n',
      'tests/test_lib.py':
        'from lib import quiet, shout\n\n\ndef test_shout():\n    assert shout("hi") == "HI!"\n\n\ndef test_quiet():\n    assert quiet("A") == "a"\n',
    },
    failToPass: ['tests/test_lib.py::test_shout'],
    passToPass: ['tests/test_lib.py::test_quiet'],
  },
  {
    id: 'fixture__calc-3',
    repo: 'fixture/calc',
    problem: 'add() is wrong for negative numbers\nadd(-1, -1) returns 0.\n',
    files: {
      'lib.py': 'def add(a, b):\n    return a - b\n',
      'tests/test_neg.py': 'from lib import add\n\n\ndef test_neg():\n    assert add(-1, -1) == -2\n',
    },
    failToPass: ['tests/test_neg.py::test_neg'],
    passToPass: [],
  },
];

/** What the fixture images' activation script sets: the model's shell shows it when the activation ran. */
export const FIXTURE_ACTIVATION = 'source /opt/fixture-env/activate';
export const FIXTURE_ENV_VALUE = 'fixture-testbed-env';
/** The template the tests pass: `{id}` as SWE-bench's naming makes it, the tag the content hash. */
export function fixtureTemplate(tag: string): string {
  return `frognano-eval-fixture.{id}:${tag}`;
}

const GIT_ENV = {
  GIT_AUTHOR_NAME: 'fixture',
  GIT_AUTHOR_EMAIL: 'fixture@example.com',
  GIT_COMMITTER_NAME: 'fixture',
  GIT_COMMITTER_EMAIL: 'fixture@example.com',
  GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z',
  GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
};

function git(cwd: string, args: string[]): string {
  return execFileSync('git', args, { cwd, env: { ...process.env, ...GIT_ENV }, encoding: 'utf8' }).trim();
}

/** Makes the build context of one fixture: the repository (committed) and the activation script. */
async function buildContext(dir: string, f: FixtureRepo): Promise<string> {
  const testbed = path.join(dir, 'testbed');
  for (const [name, text] of Object.entries(f.files)) {
    await fs.mkdir(path.dirname(path.join(testbed, name)), { recursive: true });
    await fs.writeFile(path.join(testbed, name), text);
  }
  git(testbed, ['init', '-q', '-b', 'main']);
  git(testbed, ['add', '-A']);
  git(testbed, ['commit', '-q', '-m', 'base']);
  await fs.writeFile(path.join(dir, 'activate'), `export FIXTURE_ENV=${FIXTURE_ENV_VALUE}\n`);
  await fs.writeFile(
    path.join(dir, 'Dockerfile'),
    `FROM ${BASE_IMAGE}\nCOPY testbed /testbed\nCOPY activate /opt/fixture-env/activate\nWORKDIR /testbed\n`,
  );
  return git(testbed, ['rev-parse', 'HEAD']);
}

function imageExists(image: string): boolean {
  try {
    execFileSync('docker', ['image', 'inspect', image], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The tag of this set of fixtures: the hash of the base image's id and everything in the fixtures. */
export function fixtureTag(): string {
  const base = execFileSync('docker', ['image', 'inspect', '-f', '{{.Id}}', BASE_IMAGE], { encoding: 'utf8' }).trim();
  return createHash('sha256').update(base).update(JSON.stringify(FIXTURES)).digest('hex').slice(0, 12);
}

/**
 * Builds (or reuses) the fixture images under `work` and writes the dataset (JSONL) there. Returns the dataset path,
 * the image template and the instances with their base commits.
 */
export async function prepareFixtures(work: string): Promise<{ dataset: string; template: string; ids: string[] }> {
  const tag = fixtureTag();
  const template = fixtureTemplate(tag);
  const rows: Record<string, unknown>[] = [];
  for (const f of FIXTURES) {
    const dir = path.join(work, 'ctx', f.id);
    await fs.mkdir(dir, { recursive: true });
    const baseCommit = await buildContext(dir, f);
    const image = template.replace('{id}', f.id.replace(/__/g, '_1776_').toLowerCase());
    if (!imageExists(image)) {
      execFileSync('docker', ['build', '--network', 'none', '-q', '-t', image, dir], { stdio: 'ignore' });
    }
    rows.push({
      repo: f.repo,
      instance_id: f.id,
      base_commit: baseCommit,
      patch: '',
      test_patch: '',
      problem_statement: f.problem,
      hints_text: '',
      created_at: '2026-01-01T00:00:00Z',
      version: '1.0',
      FAIL_TO_PASS: JSON.stringify(f.failToPass),
      PASS_TO_PASS: JSON.stringify(f.passToPass),
      environment_setup_commit: baseCommit,
    });
  }
  const dataset = path.join(work, 'dataset.jsonl');
  await fs.writeFile(dataset, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  return { dataset, template, ids: FIXTURES.map((f) => f.id) };
}

/** The scripted model: looks, fixes whichever bug the fixture has with sed, checks, answers. */
export const FIX_SCRIPT = {
  turns: [
    {
      content: 'Let me look around.',
      tool_calls: [
        {
          name: 'Bash',
          arguments: { command: 'pwd; echo "env=${FIXTURE_ENV:-none}"; python3 -m pytest -q 2>&1 | tail -1' },
        },
      ],
    },
    {
      content: '',
      tool_calls: [
        {
          name: 'Bash',
          arguments: {
            command:
              "sed -i 's/return a - b/return a + b/; s/s.lower() + /s.upper() + /' lib.py && python3 -m pytest -q 2>&1 | tail -1",
          },
        },
      ],
    },
    { content: 'Fixed the function.' },
  ],
};

/** predictions.jsonl read as the harness's loader reads it: one JSON object a line, not through the CLI's own reader. */
export async function predictions(out: string): Promise<Record<string, string>[]> {
  const text = await fs.readFile(path.join(out, 'predictions.jsonl'), 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, string>);
}

export const readJson = async (file: string) => JSON.parse(await fs.readFile(file, 'utf8'));
