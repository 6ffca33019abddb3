// llamacpp_run.mjs - runs a GGUF file through llama.cpp (npm node-llama-cpp, prebuilt CPU backend, no
// compiler, no download) for tests/test_gguf.py and the llama.cpp benchmark.
//   node llamacpp_run.mjs JOB.json  ->  JSON on stdout
// JOB: {"model": "F.gguf", "threads": 1, "context": 256,
//       "texts": ["..."],            -> "tokens": llama.cpp's tokenization of each text (no BOS added)
//       "prompts": [[ids]],          -> "probs": the next-token distribution after each prompt (softmax of the
//                                       raw logits, every vocabulary id) and "greedy": n_greedy tokens
//       "n_greedy": 16, "kv": "F32"}    (the KV cache type; llama.cpp's own default is F16)
import {getLlama, LlamaLogLevel} from "node-llama-cpp";
import {readFileSync} from "node:fs";

const job = JSON.parse(readFileSync(process.argv[2], "utf8"));
const threads = job.threads ?? 1;
const llama = await getLlama({gpu: false, build: "never", maxThreads: threads, logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath: job.model});
const out = {tokens: [], probs: [], greedy: []};
for (const t of job.texts ?? []) out.tokens.push(Array.from(model.tokenize(t)));
// the KV cache in F32 (llama.cpp's default is F16), so that the comparison sees the weights and the
// arithmetic, not a cache rounding the engine does not do; "kv": "F16" keeps the default
const kv = job.kv ?? "F32";
const ctx = await model.createContext({contextSize: job.context ?? 256, batchSize: job.context ?? 256, threads,
                                       experimentalKvCacheKeyType: kv, experimentalKvCacheValueType: kv});
const seq = ctx.getSequence();
for (const ids of job.prompts ?? []) {
    await seq.clearHistory();
    const items = [...ids.slice(0, -1), [ids.at(-1), {generateNext: {token: true, probabilities: true,
                                                                     options: {temperature: 0}}}]];
    const res = await seq.controlledEvaluate(items);
    const probs = new Array(res.at(-1).next.probabilities.size).fill(0);
    for (const [tok, p] of res.at(-1).next.probabilities) probs[tok] = p;
    out.probs.push(probs);
    await seq.clearHistory();
    const gen = [];
    if ((job.n_greedy ?? 0) > 0)
        for await (const tok of seq.evaluate(ids, {temperature: 0})) {
            gen.push(tok);
            if (gen.length >= job.n_greedy) break;
        }
    out.greedy.push(gen);
}
await ctx.dispose();
await model.dispose();
await llama.dispose();
process.stdout.write(JSON.stringify(out));
