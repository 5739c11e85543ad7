/** A byte-level BPE tokenizer (tokenizer.json) whose merges are learned from a small built-in corpus. */
import { SPECIAL_TOKENS } from './config.js';

/** GPT-2 byte <-> unicode table: printable bytes map to themselves, the rest to U+0100 onwards. */
function bytesToUnicode(): string[] {
  const printable: number[] = [];
  for (let b = 33; b <= 126; b++) printable.push(b);
  for (let b = 161; b <= 172; b++) printable.push(b);
  for (let b = 174; b <= 255; b++) printable.push(b);
  const table: string[] = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    table[b] = printable.includes(b) ? String.fromCharCode(b) : String.fromCharCode(256 + extra++);
  }
  return table;
}

/** Text the merges are learned from: what this model will mostly see (chat markup, tool calls, code). */
const MERGE_CORPUS = `
You are a software engineering agent working in a checked out repository. Inspect the files, make focused edits,
run the tests, then answer briefly. The user asked to fix the failing test in the function that parses the config.
<tool_call>
<function=Read>
<parameter=file_path>
src/index.ts
</parameter>
</function>
</tool_call>
<tool_response>
import { readFile } from 'node:fs/promises';
export function parse(text: string): number { return text.length; }
const result = await run(command, { timeout: 120 });
</tool_response>
function return const let import export from async await if else for while true false null undefined string number
the and to of in is that for with this on as be are it by or not
`;

function learnMerges(byteTable: string[], numMerges: number): string[] {
  const encoder = new TextEncoder();
  const words = MERGE_CORPUS.match(/ ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+/g) ?? [];
  let seqs = words.map((w) => Array.from(encoder.encode(w), (b) => byteTable[b]!));
  const merges: string[] = [];
  for (let m = 0; m < numMerges; m++) {
    const counts = new Map<string, number>();
    for (const s of seqs) {
      for (let i = 0; i + 1 < s.length; i++) {
        const key = `${s[i]} ${s[i + 1]}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
    }
    let best: string | undefined;
    let bestCount = 1;
    for (const [key, c] of counts) {
      // Ties broken lexicographically so the vocabulary is identical on every run.
      if (c > bestCount || (c === bestCount && best !== undefined && key < best)) {
        best = key;
        bestCount = c;
      }
    }
    if (!best) break;
    merges.push(best);
    const [a, b] = best.split(' ') as [string, string];
    seqs = seqs.map((s) => {
      const out: string[] = [];
      for (let i = 0; i < s.length; i++) {
        if (i + 1 < s.length && s[i] === a && s[i + 1] === b) {
          out.push(a + b);
          i++;
        } else out.push(s[i]!);
      }
      return out;
    });
  }
  return merges;
}

interface TokenizerFiles {
  tokenizer: object;
  specialIds: Record<(typeof SPECIAL_TOKENS)[number], number>;
  vocabSize: number;
}

export function buildTokenizer(numMerges: number): TokenizerFiles {
  const byteTable = bytesToUnicode();
  const vocab: Record<string, number> = {};
  const sortedBytes = [...byteTable].sort();
  for (const ch of sortedBytes) vocab[ch] = Object.keys(vocab).length;
  const merges = learnMerges(byteTable, numMerges);
  for (const m of merges) {
    const tok = m.replace(' ', '');
    if (!(tok in vocab)) vocab[tok] = Object.keys(vocab).length;
  }
  let next = Object.keys(vocab).length;
  const specialIds = {} as TokenizerFiles['specialIds'];
  const addedTokens = SPECIAL_TOKENS.map((content) => {
    const id = next++;
    specialIds[content] = id;
    // As in Qwen: only the turn/document markers are "special" (skipped when decoding with skip_special_tokens).
    const special = content === '<|endoftext|>' || content === '<|im_start|>' || content === '<|im_end|>';
    return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special };
  });
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: true };
  return {
    specialIds,
    vocabSize: next,
    tokenizer: {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: addedTokens,
      normalizer: { type: 'NFC' },
      pre_tokenizer: byteLevel,
      post_processor: { ...byteLevel, use_regex: false },
      decoder: { ...byteLevel, use_regex: false },
      model: {
        type: 'BPE',
        dropout: null,
        unk_token: null,
        continuing_subword_prefix: '',
        end_of_word_suffix: '',
        fuse_unk: false,
        byte_fallback: false,
        ignore_merges: false,
        vocab,
        merges,
      },
    },
  };
}
