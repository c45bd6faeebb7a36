// The in-process backend: one Engine (wasm/js/engine.js) plus the model sources it can
// open here. Node uses it directly; the browser's worker (wasm/js/worker.js) wraps it
// in messages. Every method is async so that both backends look the same to index.js.
import { Engine } from './engine.js';
import { blobReader, bytesReader, pathReaders, syncHandleReader } from './sources.js';
import { ensureCached, openCached } from './opfs.js';

const isNode = typeof process === 'object' && typeof process.versions?.node === 'string';
const inWorker = typeof WorkerGlobalScope !== 'undefined' && globalThis instanceof WorkerGlobalScope;

// Lets the event loop run (abort messages, postMessage delivery) without the ~4 ms
// clamp of nested setTimeout.
function makeYield() {
  if (isNode) return () => new Promise((resolve) => setImmediate(resolve));
  const channel = new MessageChannel();
  const waiting = [];
  channel.port1.onmessage = () => waiting.shift()?.();
  return () =>
    new Promise((resolve) => {
      waiting.push(resolve);
      channel.port2.postMessage(0);
    });
}

export class LocalBackend {
  static async create(options) {
    const b = new LocalBackend();
    b.engine = await Engine.create(options);
    b.yieldNow = makeYield();
    return b;
  }

  async readersFor(source, options, onProgress) {
    if (source.path !== undefined) {
      if (!isNode) throw new Error('{ path } sources work in Node only; use { url }, { blob } or { bytes }');
      return pathReaders(String(source.path));
    }
    if (source.bytes !== undefined) return [bytesReader(source.bytes, source.name)];
    if (source.blob !== undefined) {
      if (inWorker) return [blobReader(source.blob, source.name)];
      return [bytesReader(new Uint8Array(await source.blob.arrayBuffer()), source.name ?? source.blob.name)];
    }
    if (source.url !== undefined) {
      const url = String(source.url);
      if (inWorker && options.cache !== false && globalThis.navigator?.storage?.getDirectory) {
        const key = await ensureCached(url, { sha256: options.sha256, onProgress });
        const name = url.split('/').pop() || 'model.gguf';
        const opened = await openCached(key);
        return [opened.access ? syncHandleReader(opened.access, name) : blobReader(opened.file, name)];
      }
      // No OPFS here (Node, or caching turned off): download into memory.
      const response = await fetch(url);
      if (!response.ok) throw new Error(`download of ${url} failed: HTTP ${response.status}`);
      const bytes = new Uint8Array(await response.arrayBuffer());
      onProgress?.({ phase: 'download', loaded: bytes.length, total: bytes.length, cached: false });
      return [bytesReader(bytes, url.split('/').pop())];
    }
    throw new Error('a model source needs one of url, blob, bytes or path');
  }

  async load(source, options = {}, onProgress) {
    const readers = await this.readersFor(source, options, onProgress);
    try {
      return this.engine.load(readers, options, onProgress);
    } catch (e) {
      for (const r of readers) r.close?.();
      throw e;
    }
  }

  async info(model) {
    return this.engine.info(model);
  }
  async tokenize(model, text, opts) {
    return this.engine.tokenize(model, text, opts);
  }
  async detokenize(model, ids, opts) {
    return this.engine.detokenize(model, ids, opts);
  }
  async embed(model, texts) {
    return this.engine.embed(model, texts);
  }
  async applyChatTemplate(model, messages, options) {
    return this.engine.applyChatTemplate(model, messages, options);
  }
  async evalLogits(session, request) {
    return this.engine.evalLogits(session, request);
  }
  async newSession(model, contextSize) {
    return this.engine.newSession(model, contextSize);
  }
  async freeSession(session) {
    this.engine.freeSession(session);
  }
  async freeModel(model, sources) {
    this.engine.freeModel(model, sources);
  }

  // Streams pieces; signal: an AbortSignal (or { aborted }).
  generate(session, request, { signal, onDone } = {}) {
    return this.engine.generate(session, request, {
      shouldStop: () => signal?.aborted === true,
      yieldNow: this.yieldNow,
      onDone,
    });
  }

  async terminate() {}
}
