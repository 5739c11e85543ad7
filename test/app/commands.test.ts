import { describe, expect, test } from '@jest/globals';
import { parseCommand } from '../../src/app/commands.js';

describe('parseCommand', () => {
  test.each([
    ['/frognano retry', { kind: 'retry' }],
    ['  /frognano   CANCEL  ', { kind: 'cancel' }],
    ['Thanks!\r\n/frognano status\nmore text', { kind: 'status' }],
    ['/frognano', { kind: 'help' }],
    ['/frognano help', { kind: 'help' }],
    ['/frognano dance', { kind: 'help', unknown: 'dance' }],
    ['/FrogNano retry please', { kind: 'retry' }],
  ])('%j', (body, expected) => {
    expect(parseCommand(body)).toEqual(expected);
  });

  test.each([
    [''],
    ['please run /frognano retry'],
    ['> /frognano retry'],
    ['```\n/frognano retry\n```'],
    ['~~~\n/frognano cancel\n~~~'],
    ['/frognanoretry'],
    ['/frognano-retry'],
  ])('not a command: %j', (body) => {
    expect(parseCommand(body)).toBeNull();
  });

  test('null bodies are not commands', () => {
    expect(parseCommand(null)).toBeNull();
  });
});
