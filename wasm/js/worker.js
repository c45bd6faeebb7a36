// The Web Worker the browser API runs the engine in (the page's main thread never
// blocks). Messages in: { id, op, args }; out: { id, result } | { id, error } and,
// while an op runs, { id, event: 'progress' | 'piece' | 'done', data }.
// An { op: 'abort', args: [id] } message stops generation `id` before its next token.
import { LocalBackend } from './backend.js';

let backend = null;
const aborted = new Set();

async function handle(id, op, args) {
  const progress = (data) => postMessage({ id, event: 'progress', data });
  switch (op) {
    case 'init':
      backend = await LocalBackend.create(args[0]);
      return { build: backend.engine.build };
    case 'load': {
      const [source, options] = args;
      const r = await backend.load(source, options, progress);
      return { handle: r.handle, sources: r.sources, info: r.info };
    }
    case 'generate': {
      const [session, request] = args;
      const signal = {
        get aborted() {
          return aborted.has(id);
        },
      };
      let stats = null;
      for await (const piece of backend.generate(session, request, { signal, onDone: (s) => (stats = s) })) {
        postMessage({ id, event: 'piece', data: piece });
      }
      aborted.delete(id);
      return stats;
    }
    case 'abort':
      aborted.add(args[0]);
      return true;
    default:
      if (typeof backend?.[op] !== 'function' || op.startsWith('_')) throw new Error(`unknown operation ${op}`);
      return backend[op](...args);
  }
}

self.onmessage = async (e) => {
  const { id, op, args } = e.data;
  try {
    const result = await handle(id, op, args ?? []);
    postMessage({ id, result });
  } catch (err) {
    postMessage({ id, error: err?.message ?? String(err) });
  }
};
