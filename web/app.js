// The demo page: pick a model, watch it download (into OPFS) and load, then chat with
// streamed tokens, replies shown as Markdown (markdown.js). The conversation survives a
// reload (localStorage) until "New chat". "JSON mode" constrains a reply to JSON (any
// object, or the JSON schema typed in) and shows it as a code block. The engine runs in
// runnel-llm's Web Worker; this file only drives the DOM. body[data-state] (starting,
// then idle | loading | ready | generating, or unavailable when the package did not
// load) is what tests wait on.
// URL parameters set the controls' defaults: model, threads, budget, context,
// temperature, system, json (JSON mode on), schema, plus maxTokens and seed; autoload
// loads at once.
import { renderMarkdown } from './markdown.js';

const DEFAULT_MODEL = new URL('/models/SmolLM2-135M-Instruct.Q4_1.gguf', location.href).href;
const STORAGE_KEY = 'runnel-demo-conversation';
const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);

let runnel = null; // the runnel-llm package, imported below (a build output: web/runnel-llm/)
let model = null;
let session = null;
let controller = null;
// The conversation: [{ role: 'user' | 'assistant', content, format? }], format 'json'
// for a reply generated in JSON mode (the engine is given only role and content).
let messages = [];

function setState(state) {
  document.body.dataset.state = state;
  const ready = state === 'ready';
  $('prompt').disabled = !ready;
  $('send').disabled = !ready;
  $('stop').disabled = state !== 'generating';
  $('load').disabled = state !== 'idle' && state !== 'ready';
  $('new-chat').disabled = state === 'generating';
}

function showError(e) {
  $('error').textContent = e ? String(e.message ?? e) : '';
  if (e) console.error(e);
}

function formatBytes(n) {
  if (!(n > 0)) return '0 B';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  const i = Math.min(units.length - 1, Math.floor(Math.log2(n) / 10));
  return `${(n / 2 ** (10 * i)).toFixed(i ? 1 : 0)} ${units[i]}`;
}

function fillThreads() {
  const cores = navigator.hardwareConcurrency || 1;
  const isolated = globalThis.crossOriginIsolated === true;
  // The cores cap only the default: an explicit ?threads=N is honoured (up to 16) even
  // on a machine with fewer cores, where the threads share them.
  const asked = Math.floor(Number(params.get('threads')));
  const chosen = asked >= 1 ? Math.min(asked, 16) : Math.min(cores, 16);
  const max = Math.max(Math.min(cores, 16), chosen);
  for (let t = 1; t <= max; ++t) $('threads').append(new Option(String(t), String(t)));
  $('threads').value = String(chosen);
  // Without isolation the engine falls back to one thread and says so in model.info.
  if (!isolated) $('threads').title = 'this page is not cross-origin isolated (COOP/COEP): one thread will run';
}

async function refreshCache() {
  if (!runnel) return;
  try {
    const [models, storage] = await Promise.all([runnel.listCachedModels(), runnel.storageInfo()]);
    $('storage').textContent = `storage: ${formatBytes(storage.usage)} used of ${formatBytes(storage.quota)}` +
      (storage.persisted ? ' (persistent)' : '');
    const list = $('cached-list');
    list.replaceChildren();
    for (const m of models) {
      const li = document.createElement('li');
      li.textContent = `${m.url} — ${formatBytes(m.bytesOnDisk)}${m.complete ? '' : ' (partial)'}`;
      const del = document.createElement('button');
      del.textContent = 'Delete';
      del.onclick = async () => {
        await runnel.deleteCachedModel(m.url);
        refreshCache();
      };
      li.append(del);
      list.append(li);
    }
  } catch (e) {
    $('storage').textContent = `cache unavailable: ${e.message}`;
  }
}

function chosenSource() {
  const kind = document.querySelector('input[name="source"]:checked').value;
  if (kind === 'url') {
    const url = $('model-url').value.trim();
    if (!url) throw new Error('enter a model URL');
    return { url };
  }
  if (kind === 'file') {
    const file = $('model-file').files[0];
    if (!file) throw new Error('choose a .gguf file');
    return { blob: file, name: file.name };
  }
  return { url: params.get('model') ?? DEFAULT_MODEL };
}

async function load() {
  showError(null);
  setState('loading');
  try {
    if (model) {
      await model.dispose();
      model = null;
    }
    const source = chosenSource();
    const budgetMiB = Number($('budget').value) || 0;
    const started = performance.now();
    model = await runnel.loadModel(source, {
      threads: Number($('threads').value) || 1,
      contextSize: Number($('context').value) || 2048,
      memoryBudget: budgetMiB > 0 ? budgetMiB * 2 ** 20 : undefined,
      onProgress: ({ phase, loaded, total, cached }) => {
        $('progress').value = total > 0 ? loaded / total : 0;
        $('progress-text').textContent = phase === 'download'
          ? (cached ? `cached copy: ${formatBytes(total)}` : `downloading ${formatBytes(loaded)} of ${formatBytes(total)}`)
          : `loading weights ${formatBytes(loaded)} of ${formatBytes(total)}`;
        document.body.dataset.lastPhase = phase;
        if (phase === 'download') document.body.dataset.cached = String(Boolean(cached));
      },
    });
    const i = model.info;
    $('progress').value = 1;
    $('progress-text').textContent = `ready in ${((performance.now() - started) / 1000).toFixed(1)} s`;
    $('model-info').textContent = `${i.name || i.architecture}: ${i.nLayer} layers, context ${i.contextSize}, ` +
      `${i.threads} thread${i.threads > 1 ? 's' : ''}${i.threadsNote ? ` (${i.threadsNote})` : ''}, ${i.simd}, ` +
      `weights ${formatBytes(i.weightsResidentBytes)} resident${i.streaming ? ' (streaming layers)' : ''}`;
    // The conversation on the page stays: the next reply continues it with this model.
    session = model.createSession();
    setState('ready');
  } catch (e) {
    showError(e);
    setState(model ? 'ready' : 'idle');
  }
  refreshCache();
}

// A message on the page: the user's as text, the model's as Markdown, or as JSON
// (data-format="json"). data-text keeps the message's own text (what the model said,
// before rendering).
function addMessage(role, text, format) {
  const div = document.createElement('div');
  div.className = `msg ${role}`;
  if (format === 'json') div.dataset.format = 'json';
  $('chat-log').append(div);
  showText(div, text);
  return div;
}

function showText(div, text) {
  div.dataset.text = text;
  if (div.dataset.format === 'json') showJson(div, text);
  else if (div.classList.contains('assistant')) div.innerHTML = renderMarkdown(text);
  else div.textContent = text;
  $('chat-log').scrollTop = $('chat-log').scrollHeight;
}

// A JSON reply as one code block, pretty-printed once it parses; while it streams (or
// when maxTokens or Stop cut it short) the text as it came.
function showJson(div, text) {
  let shown = text;
  try {
    shown = JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    // not (yet) a complete JSON text
  }
  div.replaceChildren();
  if (shown === '') return;
  const pre = document.createElement('pre');
  const code = document.createElement('code');
  pre.className = 'json';
  code.className = 'language-json';
  code.textContent = shown;
  pre.append(code);
  div.append(pre);
}

// The conversation in localStorage, so that a reload (or a second visit) continues it.
function saveConversation(list = messages) {
  try {
    if (list.length === 0) localStorage.removeItem(STORAGE_KEY);
    else localStorage.setItem(STORAGE_KEY, JSON.stringify({ messages: list }));
  } catch (e) {
    console.warn('could not save the conversation:', e);
  }
}

function restoreConversation() {
  try {
    const saved = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? 'null');
    const list = Array.isArray(saved?.messages) ? saved.messages : [];
    messages = list.filter((m) => (m?.role === 'user' || m?.role === 'assistant') && typeof m.content === 'string')
      .map(({ role, content, format }) => (format === 'json' ? { role, content, format } : { role, content }));
  } catch {
    messages = [];
  }
  for (const m of messages) addMessage(m.role, m.content, m.format);
}

// (Disabled while a reply is generated.)
function newChat() {
  messages = [];
  saveConversation();
  $('chat-log').replaceChildren();
  $('speed').textContent = '';
  showError(null);
}

// The temperature control; the engine refuses what is out of range, naming it.
function temperature() {
  const text = $('temperature').value.trim();
  return text === '' ? 0.7 : Number(text);
}

// JSON mode's constraint: the schema's text as typed (runnel-llm parses it and names
// what is wrong with it), or any JSON object; undefined when JSON mode is off.
function jsonSchema() {
  if (!$('json-mode').checked) return undefined;
  const text = $('json-schema').value.trim();
  return text === '' ? { type: 'object' } : text;
}

function showSchemaRow() {
  $('json-schema-row').hidden = !$('json-mode').checked;
}

let partialReply = null; // the reply being generated (a message), saved if the page goes away
async function send(text) {
  showError(null);
  messages.push({ role: 'user', content: text });
  saveConversation();
  addMessage('user', text);
  const schema = jsonSchema();
  const reply = { role: 'assistant', content: '', ...(schema !== undefined && { format: 'json' }) };
  const out = addMessage('assistant', '', reply.format);
  setState('generating');
  controller = new AbortController();
  partialReply = reply;
  try {
    const chatParams = {
      maxTokens: Number(params.get('maxTokens')) || 256,
      temperature: temperature(),
      signal: controller.signal,
    };
    if (schema !== undefined) chatParams.jsonSchema = schema;
    if (params.has('seed')) chatParams.seed = Number(params.get('seed'));
    const system = $('system-prompt').value.trim();
    const history = messages.map(({ role, content }) => ({ role, content }));
    const prompt = system ? [{ role: 'system', content: system }, ...history] : history;
    for await (const piece of session.chat(prompt, chatParams)) {
      reply.content += piece;
      showText(out, reply.content);
    }
    const s = session.lastStats;
    if (s) {
      $('speed').textContent = `prompt ${s.promptTokens} tokens at ${s.promptTokensPerSecond.toFixed(1)} tok/s, ` +
        `reply ${s.generatedTokens} tokens at ${s.generateTokensPerSecond.toFixed(1)} tok/s (${s.finishReason})`;
    }
  } catch (e) {
    showError(e);
  }
  partialReply = null;
  messages.push(reply);
  saveConversation();
  controller = null;
  setState('ready');
}

$('load').onclick = load;
$('stop').onclick = () => controller?.abort();
$('chat-form').onsubmit = (e) => {
  e.preventDefault();
  const text = $('prompt').value.trim();
  if (!text || document.body.dataset.state !== 'ready') return;
  $('prompt').value = '';
  send(text);
};
$('prompt').onkeydown = (e) => {
  if (e.key === 'Enter' && !e.shiftKey) {
    e.preventDefault();
    $('chat-form').requestSubmit();
  }
};
$('new-chat').onclick = newChat;
$('json-mode').onchange = showSchemaRow;
// A reload mid-reply keeps what was said so far.
addEventListener('pagehide', () => {
  if (partialReply !== null) saveConversation([...messages, partialReply]);
});
fillThreads();
if (params.has('budget')) $('budget').value = params.get('budget');
if (params.has('context')) $('context').value = params.get('context');
if (params.has('temperature')) $('temperature').value = params.get('temperature');
if (params.has('system')) $('system-prompt').value = params.get('system');
if (params.has('json')) $('json-mode').checked = params.get('json') !== '0';
if (params.has('schema')) $('json-schema').value = params.get('schema');
showSchemaRow();
restoreConversation();
setState('starting');

// The package is a build output (web/runnel-llm/, copied by wasm/'s `npm run build`):
// a page without it says so instead of failing silently.
try {
  runnel = await import('./runnel-llm/js/index.js');
} catch (e) {
  setState('unavailable');
  showError(`The runnel-llm package did not load (${e.message ?? e}).\n` +
    'It is built, and copied into web/runnel-llm/, by: (cd wasm && npm run build)');
}
if (runnel) {
  refreshCache();
  if (params.has('autoload')) load();
  else setState('idle');
}
