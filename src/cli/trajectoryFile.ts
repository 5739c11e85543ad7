import { z } from 'zod';
import { TrajectoryFileSchema, trajectoryFromFile, type Trajectory } from '../leaf/trajectory.js';
import { readNamedFile, setupError } from './exitCodes.js';

/** "steps[3].observations[0].is_error: expected boolean, received string" — at most `max` issues. */
export function describeIssues(error: z.ZodError, max = 8): string[] {
  const lines = error.issues.slice(0, max).map((i) => `${formatPath(i.path)}: ${i.message}`);
  if (error.issues.length > max) lines.push(`… and ${error.issues.length - max} more problems`);
  return lines;
}

function formatPath(path: PropertyKey[]): string {
  if (path.length === 0) return '(top level)';
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${String(p)}`)).join('');
}

/** Reads and validates a trajectory file; every failure is a setup error naming the file and the problem. */
export async function loadTrajectoryFile(file: string): Promise<Trajectory> {
  const text = await readNamedFile(file, '', (code) =>
    code === 'EISDIR' ? 'give the trajectory.json file inside the output directory' : 'check the path',
  );
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw setupError(
      `${file} is not valid JSON: ${(err as Error).message}`,
      'was the file cut off? trajectories are written as one JSON document',
    );
  }
  const parsed = TrajectoryFileSchema.safeParse(json);
  if (!parsed.success) {
    const problems = describeIssues(parsed.error);
    throw setupError(
      `${file} is not a Leaf trajectory:\n${problems.map((p) => `    ${p}`).join('\n')}`,
      'replay reads the trajectory.json written by `frognano solve`, by the runner or by upstream Leaf',
    );
  }
  return trajectoryFromFile(parsed.data);
}
