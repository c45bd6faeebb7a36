// Loads the model named by ?model= and streams a greedy continuation into #out;
// body[data-state] becomes 'done' (or 'error', with the message in #out).
import { loadModel } from 'runnel-llm';

const params = new URLSearchParams(location.search);
const out = document.getElementById('out');
try {
  const model = await loadModel({ url: new URL(params.get('model'), location.href).href }, { contextSize: 512 });
  const session = model.createSession();
  for await (const piece of session.generate(params.get('prompt') ?? 'The capital of France is',
    { temperature: 0, maxTokens: 16 })) {
    out.textContent += piece;
  }
  document.body.dataset.simd = model.info.simd;
  document.body.dataset.state = 'done';
} catch (e) {
  out.textContent = String(e?.message ?? e);
  document.body.dataset.state = 'error';
}
