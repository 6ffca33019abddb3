// llama2_oracle.mjs - reference LLaMA-1/2 token ids from llama-tokenizer-js.
//
//   node llama2_oracle.mjs LLAMA_TOKENIZER_JS LINES OUT
//
// LINES: one JSON string per line. Writes one line of space-separated ids per input line, from
// llama-tokenizer-js's encode(text, add_bos_token = false, add_preceding_space = true): no BOS
// (an empty text gives no ids there even with BOS, unlike Hugging Face), and the "▁" that
// SentencePiece / Hugging Face's Prepend normalizer put in front of the text. It treats "<s>"
// and the like as plain text (it has no added-token splitting).
import fs from 'fs';
import { pathToFileURL } from 'url';

const [jsPath, linesPath, out] = process.argv.slice(2);
if (!out) {
  console.error('usage: node llama2_oracle.mjs LLAMA_TOKENIZER_JS LINES OUT');
  process.exit(2);
}
const { default: llama } = await import(pathToFileURL(jsPath).href);
const texts = fs.readFileSync(linesPath, 'utf8').split('\n').filter((l) => l.length > 0)
  .map((l) => JSON.parse(l));
const t0 = Date.now();
const lines = texts.map((t) => llama.encode(t, false, true).join(' ') + '\n');
fs.writeFileSync(out, lines.join(''));
console.error(`oracle: ${texts.length} lines; llama-tokenizer-js ${Date.now() - t0} ms`);
