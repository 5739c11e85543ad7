import { LEAF_SAMPLING, resolveSampling, samplingFromFlags } from '../../src/leaf/sampling.js';

describe('Leaf sampling', () => {
  it("defaults to upstream Leaf's SWE-bench Verified eval settings", () => {
    expect(resolveSampling()).toEqual({
      temperature: 0.6,
      topP: 0.95,
      topK: 20,
      minP: 0,
      repetitionPenalty: 1.0,
      seed: 42,
      enableThinking: true,
      parallelToolCalls: true,
    });
    expect(resolveSampling({ temperature: 0, seed: undefined })).toEqual({ ...LEAF_SAMPLING, temperature: 0 });
  });

  it('reads CLI flags and refuses nonsense with the flag named', () => {
    expect(samplingFromFlags({ temperature: '0.2', 'top-k': '0', thinking: 'off', 'min-p': ' ' })).toEqual({
      temperature: 0.2,
      topK: 0,
      enableThinking: false,
    });
    expect(() => samplingFromFlags({ 'top-k': '2.5' })).toThrow(
      '--top-k must be a whole number, 0 or more (0: no cut), got "2.5"',
    );
    expect(() => samplingFromFlags({ temperature: 'hot' })).toThrow(/^--temperature must be a number from 0 to 5/);
    expect(() => samplingFromFlags({ 'repetition-penalty': '0' })).toThrow(/--repetition-penalty/);
  });
});
