import { describe, expect, test } from '@jest/globals';
import { parseCommand } from '../../src/app/commands.js';
import { paragraphLineStarts } from '../../src/app/paragraphLines.js';

describe('parseCommand', () => {
  test.each([
    ['/frognano retry', { kind: 'retry' }],
    ['  /frognano   CANCEL  ', { kind: 'cancel' }],
    ['   /frognano retry', { kind: 'retry' }],
    ['Thanks!\r\n/frognano status\nmore text', { kind: 'status' }],
    ['/frognano', { kind: 'help' }],
    ['/frognano help', { kind: 'help' }],
    ['/frognano dance', { kind: 'help', unknown: 'dance' }],
    ['/FrogNano retry please', { kind: 'retry' }],
    // After the code, the quote, the comment: a paragraph of its own.
    ['```\nx\n```\n/frognano retry', { kind: 'retry' }],
    ['> quoted\n\n/frognano retry', { kind: 'retry' }],
    ['<!-- note -->\n/frognano retry', { kind: 'retry' }],
    ['    indented code\n\n/frognano retry', { kind: 'retry' }],
    ['- item\n\n/frognano retry', { kind: 'retry' }],
    ['<details>\n<summary>log</summary>\n\n/frognano retry\n\n</details>', { kind: 'retry' }],
    ['text with `code`\n/frognano cancel', { kind: 'cancel' }],
    // A fence that is not a fence (two backticks, or backticks in the info string) does not hide anything.
    ['``\n/frognano retry', { kind: 'retry' }],
    ['    ```\n\n/frognano retry', { kind: 'retry' }],
  ])('%j', (body, expected) => {
    expect(parseCommand(body)).toEqual(expected);
  });

  test.each([
    [''],
    ['please run /frognano retry'],
    ['/frognanoretry'],
    ['/frognano-retry'],
    // Fenced code (spec 4.5): backticks, tildes, longer fences, indented fences, unclosed to the end.
    ['```\n/frognano retry\n```'],
    ['~~~\n/frognano cancel\n~~~'],
    ['````\n```\n/frognano retry\n````'],
    ['~~~~\n~~~\n/frognano retry\n~~~~'],
    ['   ```sh\n/frognano retry\n   ```'],
    ['```\n/frognano retry'],
    ['text\n```\n/frognano retry\n```'],
    // Indented code (4.4): four spaces or a tab.
    ['    /frognano retry'],
    ['\t/frognano retry'],
    ['intro\n\n    /frognano retry'],
    // HTML comments and blocks (4.6), also spread over lines or inline in a paragraph.
    ['<!-- /frognano retry -->'],
    ['<!--\n/frognano retry\n-->'],
    ['<!--\n\n/frognano retry\n\n-->'],
    ['text <!--\n/frognano retry\n-->'],
    ['<div>\n/frognano retry\n</div>'],
    ['<pre>\n\n/frognano retry\n</pre>'],
    // Block quotes (5.1), nested, and their lazy continuation lines.
    ['> /frognano retry'],
    ['> > /frognano retry'],
    ['   > /frognano retry'],
    ['> quoted text\n/frognano retry'],
    ['> a\n> b\n/frognano cancel'],
    // List items (5.2) and their content.
    ['- /frognano retry'],
    ['1. /frognano retry'],
    ['- item\n  /frognano retry'],
    ['- ```\n  /frognano retry\n  ```'],
    // Code spans and tags that run over a line break.
    ['`` x\n/frognano retry ``'],
    ['<span title="a\n/frognano retry">x</span>'],
    // Headings.
    ['# /frognano retry'],
  ])('not a command: %j', (body) => {
    expect(parseCommand(body)).toBeNull();
  });

  test('null bodies are not commands', () => {
    expect(parseCommand(null)).toBeNull();
  });
});

describe('paragraphLineStarts', () => {
  test('yields each visible paragraph line, in order', () => {
    const md = [
      'first',
      'second',
      '',
      '```',
      'code',
      '```',
      '> quote',
      '',
      '    indented',
      '',
      'third <!-- hidden',
      'still hidden -->',
      'fourth',
    ].join('\n');
    expect(paragraphLineStarts(md)).toEqual(['first', 'second', 'third <!-- hidden', 'fourth']);
  });
});
