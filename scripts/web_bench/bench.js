// The in-page half of scripts/web_bench.mjs: loads a model into runnel-llm or wllama
// and times one prompt + generation, both engines fed the same text prompt (wllama
// takes text only). Figures are each engine's own timings: runnel's GenerationStats,
// wllama's llama-server timings (prompt_per_second, predicted_per_second).
import { loadModel } from '/runnel-llm/js/index.js';
import { Wllama } from '/wllama/esm/index.js';

const engines = {};

window.bench = {
  async load(engine, modelUrl, threads, nCtx) {
    if (engine === 'runnel') {
      const model = await loadModel({ url: modelUrl }, { threads, contextSize: nCtx, batchSize: 128 });
      engines.runnel = model;
      return { threads: model.info.threads, note: model.info.threadsNote, simd: model.info.simd };
    }
    const w = new Wllama({ default: '/wllama/esm/wasm/wllama.wasm' }, { suppressNativeLog: true });
    await w.loadModelFromUrl(modelUrl, { n_threads: threads, n_ctx: nCtx });
    engines.wllama = w;
    return { threads: w.getNumThreads(), multithread: w.isMultithread() };
  },

  async run(engine, prompt, nGen) {
    if (engine === 'runnel') {
      const session = engines.runnel.createSession();
      let text = '';
      for await (const p of session.generate(prompt, { temperature: 0, maxTokens: nGen })) text += p;
      const s = session.lastStats;
      await session.dispose();
      return { pp: s.promptTokensPerSecond, tg: s.generateTokensPerSecond, nPrompt: s.promptTokens, nGen: s.generatedTokens, text };
    }
    const r = await engines.wllama.createCompletion({ prompt, max_tokens: nGen, temperature: 0 });
    const t = r.timings;
    return { pp: t.prompt_per_second, tg: t.predicted_per_second, nPrompt: t.prompt_n, nGen: t.predicted_n,
      text: r.choices[0].text };
  },

  async unload(engine) {
    if (engine === 'runnel') await engines.runnel?.dispose();
    else await engines.wllama?.exit();
    delete engines[engine];
  },
};
window.benchReady = true;
