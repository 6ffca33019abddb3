// llamacpp_run.mjs - runs a GGUF file through llama.cpp (npm node-llama-cpp, prebuilt CPU backend, no
// compiler, no download) for tests/test_gguf.py and the llama.cpp benchmark.
//   node llamacpp_run.mjs JOB.json  ->  JSON on stdout
// JOB: {"model": "F.gguf", "threads": 1, "context": 256,
//       "texts": ["..."],            -> "tokens": llama.cpp's tokenization of each text (no BOS added;
//       "special_tokens": false,        with true, control tokens in the text are split out too)
//       "prompts": [[ids]],          -> "probs": the next-token distribution after each prompt (softmax of the
//                                       raw logits, every vocabulary id) and "greedy": n_greedy tokens
//       "n_greedy": 16, "kv": "F32"}    (the KV cache type; llama.cpp's own default is F16)
// Benchmark mode (bench/bench_llamacpp.py): "bench": {"prompt": [ids], "n": 64, "temperature": 0,
//   "draft": "D.gguf" (optional: speculative decoding with the draft model as token predictor),
//   "draft_tokens": 4} -> "bench": {"tokens", "seconds" (first to last generated token), "tok_s",
//   "predictions": {used, unused, validated, refuted} with a draft}
import {getLlama, LlamaLogLevel, DraftSequenceTokenPredictor} from "node-llama-cpp";
import {readFileSync} from "node:fs";

const job = JSON.parse(readFileSync(process.argv[2], "utf8"));
const threads = job.threads ?? 1;
const llama = await getLlama({gpu: false, build: "never", maxThreads: threads, logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath: job.model});
const out = {tokens: [], probs: [], greedy: []};
for (const t of job.texts ?? []) out.tokens.push(Array.from(model.tokenize(t, job.special_tokens ?? false)));
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
if (job.bench) {
    const b = job.bench;
    let draftModel = null, draftCtx = null, seqB = null;
    if (b.draft) {
        draftModel = await llama.loadModel({modelPath: b.draft});
        draftCtx = await draftModel.createContext({contextSize: job.context ?? 256, threads});
        const predictor = new DraftSequenceTokenPredictor(draftCtx.getSequence(),
                                                          {minTokens: b.draft_tokens ?? 4, maxTokens: b.draft_tokens ?? 4, minConfidence: 0});
        const ctxB = await model.createContext({contextSize: job.context ?? 256, threads});
        seqB = ctxB.getSequence({tokenPredictor: predictor});
    } else {
        await seq.clearHistory();
        seqB = seq;
    }
    const got = [];
    let t0 = 0;
    /* n tokens as the engine's decode makes them: llama.cpp ends a generation at an end-of-generation
     * token without emitting it, so it is counted as generated and fed back to go on */
    const opts = {temperature: b.temperature ?? 0, seed: b.seed ?? 1};
    let input = b.prompt;
    while (got.length < b.n) {
        for await (const tok of seqB.evaluate(input, opts)) {
            if (got.length === 0) t0 = performance.now(); /* the prompt's prefill is over */
            got.push(tok);
            if (got.length >= b.n) break;
        }
        if (got.length >= b.n || model.tokens.eos == null) break;
        if (got.length === 0) t0 = performance.now();
        got.push(model.tokens.eos);
        input = [model.tokens.eos];
    }
    const secs = (performance.now() - t0) / 1000;
    out.bench = {tokens: got.length, seconds: secs, tok_s: (got.length - 1) / secs,
                 predictions: b.draft ? seqB.tokenPredictions : null};
    if (draftCtx) await draftCtx.dispose();
    if (draftModel) await draftModel.dispose();
}
await ctx.dispose();
await model.dispose();
await llama.dispose();
process.stdout.write(JSON.stringify(out));
