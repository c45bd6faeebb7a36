// runnel-llm: GGUF language models in the browser (Web Worker + OPFS cache) and in Node.
//
//   import { loadModel } from 'runnel-llm';
//   const model = await loadModel({ url }, { threads: 2, onProgress });
//   const session = model.createSession({ contextSize: 2048 });
//   for await (const piece of session.chat([{ role: 'user', content: 'Hi' }])) ...
//
// In a page the engine runs in a dedicated Worker (wasm/js/worker.js); in Node and
// inside workers it runs in-process (wasm/js/backend.js). index.d.ts documents it all.
import { LocalBackend } from './backend.js';
import { deleteCachedModel, listCachedModels, storageInfo } from './opfs.js';

export { deleteCachedModel, listCachedModels, storageInfo };

const onPageMainThread =
  typeof window === 'object' && typeof document === 'object' && typeof Worker === 'function';

// The worker backend: the same methods as LocalBackend, as messages.
class WorkerBackend {
  static async create(options) {
    const b = new WorkerBackend();
    // The literal `new Worker(new URL(...), { type: 'module' })` lets bundlers (Vite)
    // find and bundle the worker.
    b.worker = options.workerUrl
      ? new Worker(options.workerUrl, { type: 'module' })
      : new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
    b.nextId = 1;
    b.pending = new Map();
    b.worker.onmessage = (e) => b.receive(e.data);
    b.worker.onerror = (e) => {
      const err = new Error(`the runnel worker failed: ${e.message ?? 'could not start (check the worker URL)'}`);
      for (const p of b.pending.values()) p.reject(err);
      b.pending.clear();
    };
    const { distUrl, threads, isa } = options;
    await b.send('init', [{ threads, isa, distUrl: distUrl ? String(distUrl) : undefined }]);
    return b;
  }

  receive(msg) {
    const p = this.pending.get(msg.id);
    if (!p) return;
    if (msg.event) {
      p.onEvent?.(msg.event, msg.data);
      return;
    }
    this.pending.delete(msg.id);
    if ('error' in msg) p.reject(new Error(msg.error));
    else p.resolve(msg.result);
  }

  send(op, args, onEvent) {
    const id = this.nextId++;
    const promise = new Promise((resolve, reject) => this.pending.set(id, { resolve, reject, onEvent }));
    this.worker.postMessage({ id, op, args });
    return Object.assign(promise, { id });
  }

  load(source, options, onProgress) {
    const { onProgress: _drop, signal: _signal, ...rest } = options ?? {};
    return this.send('load', [source, rest], (event, data) => event === 'progress' && onProgress?.(data));
  }

  async *generate(session, request, { signal, onDone } = {}) {
    const queue = [];
    let wake = null;
    let finished = false;
    let failure = null;
    const call = this.send('generate', [session, request], (event, data) => {
      if (event === 'piece') {
        queue.push(data);
        wake?.();
      }
    });
    call.then(
      (stats) => {
        finished = true;
        onDone?.(stats);
        wake?.();
      },
      (e) => {
        failure = e;
        finished = true;
        wake?.();
      },
    );
    const abort = () => this.send('abort', [call.id]);
    signal?.addEventListener?.('abort', abort, { once: true });
    try {
      while (true) {
        if (queue.length > 0) {
          yield queue.shift();
          continue;
        }
        if (finished) break;
        await new Promise((resolve) => (wake = resolve));
        wake = null;
      }
      if (failure) throw failure;
    } finally {
      signal?.removeEventListener?.('abort', abort);
      if (!finished) {
        abort();
        await call.catch(() => {});
      }
    }
  }

  terminate() {
    this.worker.terminate();
  }
}
for (const op of ['info', 'tokenize', 'detokenize', 'embed', 'applyChatTemplate', 'newSession', 'freeSession',
  'freeModel', 'evalLogits']) {
  WorkerBackend.prototype[op] = function (...args) {
    return this.send(op, args);
  };
}

// The generation parameters: the same as `runnel serve`'s request fields where they map
// (max_tokens, temperature, top_k, top_p, min_p, presence_penalty, frequency_penalty,
// repeat_penalty, seed, stop, logit_bias), camelCased, plus typicalP and penaltyLastN.
// Types are checked here; ranges in the engine (SamplerParams::validate), which names
// the field.
const kNumberParams = ['maxTokens', 'temperature', 'topK', 'topP', 'minP', 'typicalP', 'repeatPenalty',
  'frequencyPenalty', 'presencePenalty', 'penaltyLastN', 'seed', 'topLogprobs', 'lookupNgram'];
const kKnownParams = new Set([...kNumberParams, 'stop', 'logitBias', 'grammar', 'jsonSchema', 'chatTemplateKwargs',
  'tools', 'toolChoice', 'parallelToolCalls', 'logprobs', 'signal']);

// chatTemplateKwargs: the server's chat_template_kwargs (template variables such as
// Qwen3's enable_thinking); the engine refuses keys it does not know, by name.
function checkTemplateKwargs(kwargs) {
  if (kwargs === undefined) return undefined;
  if (kwargs === null || typeof kwargs !== 'object' || Array.isArray(kwargs)) {
    throw new TypeError('chatTemplateKwargs must be an object, e.g. { enable_thinking: false }');
  }
  return kwargs;
}

function checkParams(params) {
  if (params !== undefined && params !== null && typeof params !== 'object') {
    throw new TypeError(`generation parameters must be an object, got ${typeof params}`);
  }
  const p = { ...(params ?? {}) };
  for (const key of Object.keys(p)) {
    if (p[key] !== undefined && !kKnownParams.has(key)) {
      throw new TypeError(`unknown generation parameter ${key} (known: ${[...kKnownParams].join(', ')})`);
    }
  }
  for (const key of kNumberParams) {
    if (p[key] !== undefined && (typeof p[key] !== 'number' || !Number.isFinite(p[key]))) {
      throw new TypeError(`${key} must be a finite number, got ${p[key]}`);
    }
  }
  if (p.stop !== undefined && typeof p.stop !== 'string' &&
      !(Array.isArray(p.stop) && p.stop.every((s) => typeof s === 'string'))) {
    throw new TypeError('stop must be a string or an array of strings');
  }
  if (p.logitBias !== undefined) p.logitBias = checkLogitBias(p.logitBias);
  // logprobs / topLogprobs: the server's chat fields; the figures land in
  // session.lastLogprobs. The engine checks topLogprobs' range.
  if (p.logprobs !== undefined && typeof p.logprobs !== 'boolean') {
    throw new TypeError(`logprobs must be a boolean, got ${p.logprobs}`);
  }
  // The output constraint (the server's grammar / json_schema): GBNF text, or a JSON
  // schema (an object, or its JSON text). The engine compiles it and names the line and
  // column of a grammar error.
  if (p.grammar !== undefined && (typeof p.grammar !== 'string' || p.grammar === '')) {
    throw new TypeError('grammar must be a non-empty string (a GBNF grammar)');
  }
  if (p.jsonSchema !== undefined && typeof p.jsonSchema !== 'string' && typeof p.jsonSchema !== 'boolean' &&
      (p.jsonSchema === null || typeof p.jsonSchema !== 'object' || Array.isArray(p.jsonSchema))) {
    throw new TypeError('jsonSchema must be a JSON schema: an object, or its JSON text');
  }
  if (p.grammar !== undefined && p.jsonSchema !== undefined) {
    throw new TypeError('grammar and jsonSchema each constrain the output: give at most one of them');
  }
  const { signal, chatTemplateKwargs, ...rest } = p;
  return { params: rest, signal, chatTemplateKwargs: checkTemplateKwargs(chatTemplateKwargs) };
}

// logitBias: { [tokenId]: bias } (OpenAI's logit_bias) or a Map / [[id, bias], ...];
// bias in [-100, 100], -100 bans the token. The engine checks ids against the vocabulary.
function checkLogitBias(bias) {
  const entries = bias instanceof Map ? [...bias] : Array.isArray(bias) ? bias
    : bias !== null && typeof bias === 'object' ? Object.entries(bias) : null;
  if (entries === null) throw new TypeError('logitBias must be an object of token id -> bias');
  const out = {};
  for (const entry of entries) {
    const [id, b] = Array.isArray(entry) ? entry : [];
    if (!/^\d+$/.test(String(id))) throw new RangeError(`logitBias: ${id} is not a token id (an integer >= 0)`);
    if (typeof b !== 'number' || !(b >= -100 && b <= 100)) {
      throw new RangeError(`logitBias[${id}] must be a number in [-100, 100], got ${b}`);
    }
    out[String(Number(id))] = b;
  }
  return out;
}

export class Session {
  constructor(model, handle, contextSize) {
    this.model = model;
    this.handle = handle;
    this.contextSize = contextSize;
    this.lastStats = null; // the stats of the last finished generation
    // The last chat generation's reply split up: { content, reasoning, toolCalls:
    // [{ id, name, arguments (an object) }] } (null after generate()).
    this.lastReply = null;
    // With params.logprobs: the last generation's tokens with their log probabilities.
    this.lastLogprobs = null;
    this.busy = false;
  }

  // Streams the continuation of `prompt` (text, or an array of token ids). The prompt
  // is the whole context: whatever prefix this session already holds is reused.
  generate(prompt, params) {
    const request = Array.isArray(prompt) ? { tokens: prompt } : { text: String(prompt) };
    return this.run(request, params);
  }

  // Streams the assistant's reply to `messages` ([{ role, content }]) through the
  // model's chat template.
  chat(messages, params) {
    return this.run({ messages }, params);
  }

  // The logits at every position of `prompt` (text, or an array of token ids), one
  // Float32Array [nVocab] per prompt token (row i predicts the token after token i), as
  // `runnel run --all-logits` gives them: the prompt is evaluated as the whole context
  // from an empty cache. Needs a model loaded with { allLogits: true }.
  async evalLogits(prompt) {
    if (this.handle === null) throw new Error('this session was disposed');
    if (this.busy) throw new Error('this session is generating; one request at a time');
    const request = Array.isArray(prompt) ? { tokens: prompt } : { text: String(prompt) };
    this.busy = true;
    try {
      return await this.model.backend.evalLogits(this.handle, request);
    } finally {
      this.busy = false;
    }
  }

  async *run(request, rawParams) {
    const { params, signal, chatTemplateKwargs } = checkParams(rawParams);
    if (chatTemplateKwargs !== undefined) {
      if (!request.messages) throw new TypeError('chatTemplateKwargs: only for chat(messages)');
      request = { ...request, chatTemplateKwargs };
    }
    for (const key of ['tools', 'toolChoice', 'parallelToolCalls']) {
      if (params[key] !== undefined && !request.messages) throw new TypeError(`${key}: only for chat(messages)`);
    }
    if (params.tools !== undefined && !Array.isArray(params.tools)) {
      throw new TypeError('tools must be an array of { name, description?, parameters? }');
    }
    if (this.handle === null) throw new Error('this session was disposed');
    if (this.busy) throw new Error('this session is already generating; one generation at a time');
    this.busy = true;
    this.lastReply = null;
    this.lastLogprobs = null;
    try {
      if (signal?.aborted) return;
      yield* this.model.backend.generate(this.handle, { ...request, params }, {
        signal,
        onDone: (stats) => {
          const { reply, logprobs, ...rest } = stats ?? {};
          this.lastStats = stats ? rest : null;
          this.lastReply = reply ?? null;
          this.lastLogprobs = logprobs ?? null;
        },
      });
    } finally {
      this.busy = false;
    }
  }

  async dispose() {
    if (this.handle === null) return;
    const h = this.handle;
    this.handle = null;
    await this.model.backend.freeSession(h);
  }
}

export class Model {
  constructor(backend, loaded) {
    this.backend = backend;
    this.handle = loaded.handle;
    this.sources = loaded.sources;
    this.info = loaded.info;
  }

  // Token ids of `text` (BOS added as the model wants unless addSpecial is false).
  tokenize(text, { addSpecial = true, parseSpecial = false } = {}) {
    return this.backend.tokenize(this.handle, text, { addSpecial, parseSpecial });
  }

  detokenize(ids, { special = false } = {}) {
    return this.backend.detokenize(this.handle, ids, { special });
  }

  // The prompt chat(messages, { chatTemplateKwargs }) would evaluate.
  applyChatTemplate(messages, { chatTemplateKwargs } = {}) {
    return this.backend.applyChatTemplate(this.handle, messages,
      { chatTemplateKwargs: checkTemplateKwargs(chatTemplateKwargs) });
  }

  // Sentence embeddings, as `runnel serve`'s /v1/embeddings: each text's final hidden
  // states (after the output norm) mean-pooled and L2-normalized, [nEmbd] floats. One
  // text gives one Float32Array, an array of texts an array of them (in order).
  // options.signal (an AbortSignal) is checked between texts.
  async embed(input, { signal } = {}) {
    if (this.handle === null) throw new Error('this model was disposed');
    const single = typeof input === 'string';
    const texts = single ? [input] : input;
    if (!Array.isArray(texts) || texts.length === 0 || !texts.every((t) => typeof t === 'string')) {
      throw new TypeError('embed(input): input must be a string or a non-empty array of strings');
    }
    const out = [];
    for (const [i, text] of texts.entries()) {
      signal?.throwIfAborted();
      // One text per call: a long list does not hold the worker between texts.
      try {
        out.push((await this.backend.embed(this.handle, [text]))[0]);
      } catch (e) {
        throw new Error(e.message.replace(/^input\[0\]/, `input[${i}]`));
      }
    }
    return single ? out[0] : out;
  }

  // Fresh figures (resident bytes, bytes read) merged into model.info.
  async refreshInfo() {
    this.info = await this.backend.info(this.handle);
    return this.info;
  }

  // A conversation with its own KV cache. Synchronous: the handle is made when first
  // used, so `model.createSession()` reads like the spec.
  createSession({ contextSize = 0 } = {}) {
    if (this.handle === null) throw new Error('this model was disposed');
    if (!Number.isInteger(contextSize) || contextSize < 0 || contextSize > this.info.contextSize) {
      throw new RangeError(`contextSize must be an integer in [0, ${this.info.contextSize}], got ${contextSize}`);
    }
    const model = this;
    const session = new Session(model, null, contextSize || this.info.contextSize);
    const ready = this.backend.newSession(this.handle, contextSize);
    const run = session.run.bind(session);
    session.run = async function* (request, params) {
      if (session.handle === null && !session.disposed) session.handle = await ready;
      yield* run(request, params);
    };
    const evalLogits = session.evalLogits.bind(session);
    session.evalLogits = async (prompt) => {
      if (session.handle === null && !session.disposed) session.handle = await ready;
      return evalLogits(prompt);
    };
    const dispose = session.dispose.bind(session);
    session.dispose = async () => {
      session.disposed = true;
      if (session.handle === null) session.handle = await ready.catch(() => null);
      await dispose();
    };
    return session;
  }

  async dispose() {
    if (this.handle === null) return;
    const h = this.handle;
    this.handle = null;
    await this.backend.freeModel(h, this.sources);
    await this.backend.terminate();
  }
}

// Loads a GGUF model. source: { url } | { blob } | { bytes } | { path } (Node).
// options: { threads, memoryBudget, contextSize, kvType, batchSize, allLogits, draftMax, onProgress,
//            sha256, cache, distUrl, workerUrl, isa }.
export async function loadModel(source, options = {}) {
  if (source === null || typeof source !== 'object') {
    throw new TypeError('loadModel(source): source must be { url }, { blob }, { bytes } or { path }');
  }
  const threads = options.threads ?? 1;
  if (!Number.isInteger(threads) || threads < 1 || threads > 64) {
    throw new RangeError(`threads must be an integer in [1, 64], got ${threads}`);
  }
  if (options.allLogits !== undefined && typeof options.allLogits !== 'boolean') {
    throw new TypeError(`allLogits must be a boolean, got ${options.allLogits}`);
  }
  if (options.memoryBudget !== undefined && !(options.memoryBudget >= 0)) {
    throw new RangeError(`memoryBudget must be a number of bytes >= 0, got ${options.memoryBudget}`);
  }
  const backendOptions = { threads, isa: options.isa ?? '', distUrl: options.distUrl, workerUrl: options.workerUrl };
  const backend = onPageMainThread
    ? await WorkerBackend.create(backendOptions)
    : await LocalBackend.create(backendOptions);
  try {
    const { onProgress, ...loadOptions } = options;
    const loaded = await backend.load(source, loadOptions, onProgress);
    return new Model(backend, loaded);
  } catch (e) {
    await backend.terminate();
    throw e;
  }
}
