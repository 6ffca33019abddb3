// special_oracle.js - reference ids for texts that hold added tokens ("<s>", "<|endoftext|>"),
// from transformers.js (@lenml/tokenizers), which splits added tokens out of the text as Hugging
// Face tokenizers do.
//
//   node special_oracle.js NODE_MODULES_DIR TOKENIZER_DIR LINES OUT
//
// TOKENIZER_DIR holds tokenizer.json and optionally tokenizer_config.json (legacy is forced to
// true, so that transformers.js keeps the normalizer of tokenizer.json as Hugging Face tokenizers
// does). LINES: one JSON string per line. Writes one line of space-separated ids per text,
// encoded without BOS/EOS (add_special_tokens false).
'use strict';
const fs = require('fs');
const path = require('path');

const [nodeModules, dir, linesPath, out] = process.argv.slice(2);
if (!out) {
  console.error('usage: node special_oracle.js NODE_MODULES_DIR TOKENIZER_DIR LINES OUT');
  process.exit(2);
}
const { TokenizerLoader } = require(path.join(nodeModules, '@lenml/tokenizers'));
const readJson = (name) => JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8'));
const config = fs.existsSync(path.join(dir, 'tokenizer_config.json')) ? readJson('tokenizer_config.json') : {};
config.legacy = true;
if (!config.tokenizer_class) config.tokenizer_class = 'PreTrainedTokenizer';
const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON: readJson('tokenizer.json'), tokenizerConfig: config });
const texts = fs.readFileSync(linesPath, 'utf8').split('\n').filter((l) => l.length > 0)
  .map((l) => JSON.parse(l));
fs.writeFileSync(out, texts.map((t) => tok.encode(t, { add_special_tokens: false }).join(' ') + '\n').join(''));
