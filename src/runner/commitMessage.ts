import { defang } from '../github/untrusted.js';
import { clip } from '../util/clip.js';
import { redact } from '../util/redact.js';

/**
 * A round's commit message: the subject the round names (cut to 72), then the model's final message, defanged
 * (GitHub links, and closes issues on "Fixes #n", in commit messages too).
 */
export function commitMessage(subject: string, issueNumber: number, finalMessage: string): string {
  const bodyText = defang(clip(redact(finalMessage).trim(), 4000));
  return (
    `${subject.slice(0, 72)}\n\nRefs #${issueNumber}. Written by the FrogNano-4B model; needs human review.\n` +
    `${bodyText ? `\n${bodyText}\n` : ''}`
  );
}
