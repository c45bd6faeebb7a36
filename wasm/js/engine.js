// The engine: the wasm module and its C ABI (wasm/src/exports.cpp) wrapped for JS.
// It runs wherever the wasm runs: in-process in Node, inside the Web Worker in the
// browser (wasm/js/worker.js). Model bytes reach the wasm through readers, objects
// with { size, name, read(offset, view) -> bytes read }, called synchronously.

const isNode = typeof process === 'object' && typeof process.versions?.node === 'string';

// Node built-ins, imported through a variable so that bundlers leave them alone.
export const nodeImport = (name) => import(/* @vite-ignore */ name);

// The module files, each named in a static `new URL(..., import.meta.url)` so that
// bundlers (Vite, webpack) copy them and rewrite the URLs.
function packagedFiles(build) {
  if (build === 'runnel-mt') {
    return {
      mjs: new URL('../dist/runnel-mt.mjs', import.meta.url),
      wasm: new URL('../dist/runnel-mt.wasm', import.meta.url),
      worker: new URL('../dist/runnel-mt.worker.js', import.meta.url),
    };
  }
  return { mjs: new URL('../dist/runnel.mjs', import.meta.url), wasm: new URL('../dist/runnel.wasm', import.meta.url) };
}

// Which build runs: the pthreads one needs SharedArrayBuffer (a cross-origin isolated
// page); Node runs the single-threaded build.
function chooseBuild(threads) {
  if (threads <= 1) return { file: 'runnel', threads: 1, note: 'one thread requested' };
  if (isNode) return { file: 'runnel', threads: 1, note: 'Node runs the single-threaded build' };
  if (typeof SharedArrayBuffer === 'undefined' || globalThis.crossOriginIsolated !== true) {
    return {
      file: 'runnel',
      threads: 1,
      note: 'the page is not cross-origin isolated (COOP/COEP headers), so threads are off',
    };
  }
  return { file: 'runnel-mt', threads, note: '' };
}

export class Engine {
  static async create({ threads = 1, isa = '', distUrl } = {}) {
    const build = chooseBuild(Math.max(1, Math.floor(threads)));
    const files = distUrl
      ? {
        mjs: new URL(`${build.file}.mjs`, distUrl),
        wasm: new URL(`${build.file}.wasm`, distUrl),
        worker: new URL(`${build.file}.worker.js`, distUrl),
      }
      : packagedFiles(build.file);
    const moduleUrl = files.mjs;
    const wasmUrl = files.wasm;
    const { default: factory } = await import(/* @vite-ignore */ moduleUrl.href);
    const engine = new Engine(build);
    const options = {
      runnelRead: (source, offset, view) => engine.read(source, offset, view),
      runnelLoadProgress: (done, total) => engine.onLoadProgress?.(done, total),
      runnelPoolSize: build.threads - 1,
      locateFile: (path) => (path.endsWith('.wasm') ? wasmUrl.href
        : path.endsWith('.worker.js') && files.worker ? files.worker.href : new URL(path, moduleUrl).href),
      mainScriptUrlOrBlob: moduleUrl.href,
    };
    if (isNode) {
      const fs = await nodeImport('node:fs');
      const { fileURLToPath } = await nodeImport('node:url');
      options.wasmBinary = fs.readFileSync(fileURLToPath(wasmUrl));
    }
    engine.m = await factory(options);
    if (!engine.m._rn_select_isa(engine.cstr(isa))) throw new Error(engine.lastError());
    return engine;
  }

  constructor(build) {
    this.build = build;
    this.sources = new Map(); // source id -> reader
    this.nextSource = 1;
    this.onLoadProgress = null;
    this.m = null;
  }

  // ---- C ABI helpers
  cstr(s) {
    // A NUL-terminated copy in wasm memory; freed by the caller through this.free.
    const n = this.m.lengthBytesUTF8(s) + 1;
    const p = this.m._malloc(n);
    this.m.stringToUTF8(s, p, n);
    return p;
  }

  lastError() {
    return this.m.UTF8ToString(this.m._rn_last_error()) || 'unknown error';
  }

  // Calls rn_NAME with string arguments converted; returns the number or parsed JSON.
  call(name, args, { json = false } = {}) {
    const ptrs = [];
    const cargs = args.map((a) => {
      if (typeof a !== 'string') return a;
      const p = this.cstr(a);
      ptrs.push(p);
      return p;
    });
    try {
      const r = this.m[`_rn_${name}`](...cargs);
      if (json) {
        if (r === 0) throw new Error(this.lastError());
        return JSON.parse(this.m.UTF8ToString(r));
      }
      if (r === 0) throw new Error(this.lastError());
      return r;
    } finally {
      for (const p of ptrs) this.m._free(p);
    }
  }

  read(source, offset, view) {
    const reader = this.sources.get(source);
    if (!reader) return -1;
    try {
      return reader.read(offset, view);
    } catch (e) {
      this.readError = e;
      return -1;
    }
  }

  // ---- models
  // readers: [{ size, name, read }] (one per file of a split model). Returns
  // { handle, info }.
  load(readers, options = {}, onProgress) {
    const files = readers.map((r) => {
      const source = this.nextSource++;
      this.sources.set(source, r);
      return { source, size: r.size, name: r.name };
    });
    const request = {
      files,
      contextSize: options.contextSize ?? 0,
      memoryBudget: options.memoryBudget ?? 0,
      threads: this.build.threads,
      kvType: options.kvType ?? 'f16',
      batchSize: options.batchSize ?? 64,
      allLogits: options.allLogits === true,
      ...(options.draftMax !== undefined && { draftMax: options.draftMax }),
    };
    this.onLoadProgress = onProgress
      ? (done, total) => onProgress({ phase: 'load', loaded: done, total })
      : null;
    try {
      const handle = this.call('model_load', [JSON.stringify(request)]);
      return { handle, sources: files.map((f) => f.source), info: this.info(handle) };
    } catch (e) {
      for (const f of files) this.sources.delete(f.source);
      if (this.readError) {
        const cause = this.readError;
        this.readError = null;
        throw new Error(`${e.message} (${cause.message ?? cause})`);
      }
      throw e;
    } finally {
      this.onLoadProgress = null;
    }
  }

  info(model) {
    const info = this.call('model_info', [model], { json: true });
    info.threadsNote = this.build.note;
    info.heapBytes = this.m.HEAPU8.length;
    return info;
  }

  freeModel(model, sources = []) {
    this.m._rn_model_free(model);
    for (const s of sources) {
      this.sources.get(s)?.close?.();
      this.sources.delete(s);
    }
  }

  tokenize(model, text, { addSpecial = true, parseSpecial = false } = {}) {
    return this.call('tokenize', [model, String(text), addSpecial ? 1 : 0, parseSpecial ? 1 : 0], {
      json: true,
    });
  }

  detokenize(model, ids, { special = false } = {}) {
    return this.call('detokenize', [model, JSON.stringify(Array.from(ids)), special ? 1 : 0], {
      json: true,
    });
  }

  // texts: an array of strings -> one Float32Array [nEmbd] per text.
  embed(model, texts) {
    return this.call('embed', [model, JSON.stringify(texts)], { json: true }).embeddings.map((e) => Float32Array.from(e));
  }

  applyChatTemplate(model, messages, { chatTemplateKwargs } = {}) {
    return this.call('apply_chat', [model, JSON.stringify({ messages, chatTemplateKwargs })], { json: true });
  }

  newSession(model, contextSize = 0) {
    return this.call('session_new', [model, contextSize | 0]);
  }

  freeSession(session) {
    this.m._rn_session_free(session);
  }

  // request: { text | tokens | messages } -> one Float32Array [nVocab] per prompt token
  // (rn_eval_logits: the prompt as the whole context; row i predicts token i + 1).
  evalLogits(session, request) {
    const r = this.call('eval_logits', [session, JSON.stringify(request)], { json: true });
    // A view of wasm memory (pointers above 2 GB arrive as numbers >= 2^31): copy the
    // rows out before the next call replaces them.
    const all = new Float32Array(this.m.HEAPU8.buffer, r.offset, r.nTokens * r.nVocab);
    return Array.from({ length: r.nTokens }, (_, i) => all.slice(i * r.nVocab, (i + 1) * r.nVocab));
  }

  // Streams the pieces of one generation. request: { text | tokens | messages, params }.
  // `shouldStop()` is polled between tokens (an AbortSignal or a worker's abort
  // message); `yieldNow()` lets the event loop run between tokens. Returns the stats
  // through onDone.
  async *generate(session, request, { shouldStop = () => false, yieldNow, onDone } = {}) {
    // Stop strings are matched in the engine (core/runtime/request.h), as natively.
    this.call('generate_start', [session, JSON.stringify(request)]);
    let stats = null;
    try {
      while (true) {
        if (shouldStop()) {
          const r = this.call('generate_stop', [session], { json: true });
          stats = r.stats;
          break;
        }
        const r = this.call('generate_step', [session], { json: true });
        if (r.piece) yield r.piece;
        if (r.done) {
          stats = r.stats;
          break;
        }
        if (yieldNow) await yieldNow();
      }
    } finally {
      if (stats === null) {
        // The consumer left early (break / return): end the generation in the wasm too.
        try {
          stats = this.call('generate_stop', [session], { json: true }).stats;
        } catch {
          // no generation in progress
        }
      }
      const tokens = stats ? stats.generatedTokens : 0;
      if (stats) stats.bytesReadPerToken = tokens > 0 ? stats.bytesRead / tokens : 0;
      onDone?.(stats);
    }
  }
}
