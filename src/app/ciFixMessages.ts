/** What the bot says on its pull request about failing CI (each at most once, src/app/ciFix.ts). */

const list = (names: string[]) => names.map((n) => `\`${n.replace(/`/g, "'")}\``).join(', ');

export function humanHeadText(): string {
  return (
    'CI failed on a commit a person pushed to this branch. frognano does not fix that automatically (the code is ' +
    'theirs); comment `/frognano <what to change>` to ask for a round.'
  );
}

export function predatesText(names: string[], baseRef: string): string {
  return (
    `The failing check${names.length === 1 ? '' : 's'} ${list(names)} fail${names.length === 1 ? 's' : ''} on \`${baseRef}\` too: ` +
    'the failure predates this pull request, so frognano starts no round for it.'
  );
}

export function capText(o: { max: number; failing: string[]; tried: string[] }): string {
  const lines = [
    `### 🧑‍🔧 frognano: CI still fails after ${o.max} automatic round${o.max === 1 ? '' : 's'}`,
    '',
    `Still failing: ${list(o.failing)}.`,
  ];
  if (o.tried.length > 0)
    lines.push(
      '',
      'What the rounds tried (from the run history):',
      '',
      '| Round | Trigger | Commit | Result |',
      '| --- | --- | --- | --- |',
      ...o.tried,
    );
  lines.push(
    '',
    'This pull request is labelled `frognano:needs-human`. Later failures start nothing until a person asks for a round ' +
      'with `/frognano <what to change>` (`ciFix.maxRounds` in `.github/frognano.yml` sets the limit).',
  );
  return lines.join('\n');
}
