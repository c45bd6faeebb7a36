#!/usr/bin/env node
// Speculative decoding by prompt lookup: runnel's `run --lookup-ngram N` against itself
// without it (`--lookup-ngram 0`), on chat tasks whose reply repeats the prompt (copy a
// paragraph, correct its spelling, rename a variable in code) and on tasks whose reply
// does not (a story, an explanation, a list of tips). Greedy (temperature 0), so the
// reply must be the same text with and without: a difference is reported as a MISMATCH
// (exit status 1 when it is runnel's).
// A benchmark, not a test: it prints figures, and checks them against the targets
// (repeating tasks >= 1.5x, every non-repeating prompt >= 0.95x).
//
//   node scripts/lookup_bench.mjs [--model FILE] [--threads 2] [--runs 5] [--ngram 3]
//                                 [--draft-max 8] [--tokens 256] [--peers llama-server,llama-lookup|none]
//   env: RUNNEL_BIN (default build-release/runnel), LLAMA_SERVER (default
//   build-llama.cpp/build/bin/llama-server, scripts/build_llama_cpp.sh llama-server),
//   LLAMA_LOOKUP (default build-llama.cpp/build/bin/llama-lookup, else
//   build-llama.cpp/build-lookup/bin/llama-lookup; an example, so build_llama_cpp.sh does not
//   build it: cmake -S build-llama.cpp/src -B build-llama.cpp/build-lookup
//   -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_EXAMPLES=ON &&
//   cmake --build build-llama.cpp/build-lookup --target llama-lookup)
//
// llama.cpp's equivalents, each with and without on the same prompt text (the model's chat
// template as llama-server's /apply-template renders it), same threads and token limit:
// - llama-server --spec-type ngram-simple: the same idea (the tokens after the latest
//   earlier occurrence of the last n tokens) with a fixed n (--ngram, no shorter match) and a
//   fixed draft of --draft-max tokens; two servers, one without. Figures: its own timings
//   (predicted_n / predicted_ms, draft_n, draft_n_accepted) of a /completion request.
// - llama-lookup (examples/lookup): prompt lookup from an n-gram cache of 1- to 4-grams,
//   drafts of --draft-max tokens (--spec-draft-n-max; 0 for without). Figures: its
//   "decoded N tokens in X seconds" and n_drafted / n_accept lines. It checks the token
//   limit only between drafts, so it may run past it by up to a draft.
// Rates are each engine's generated tokens / its generation time (prompt excluded). Runs
// interleave (every arm of every prompt, then the next run, every other run backwards) so
// machine noise hits all arms alike; medians of --runs runs after one warm-up per arm.
import {execFile, spawn} from "node:child_process";
import {existsSync} from "node:fs";
import net from "node:net";
import {cpus, loadavg} from "node:os";
import path from "node:path";
import {promisify} from "node:util";
import {fileURLToPath} from "node:url";

import {median, parseCli, positiveInt} from "./lib/cli.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const run = promisify(execFile);
const usage = "usage: node scripts/lookup_bench.mjs [--model FILE] [--threads 2] [--runs 5] [--ngram 3] " +
              "[--draft-max 8] [--tokens 256] [--peers llama-server,llama-lookup|none]";
const opts = parseCli("lookup_bench", usage, {
  model: {type: "string", default: path.join(root, "models/SmolLM2-135M-Instruct.Q4_1.gguf")},
  threads: {type: "string", default: "2"},
  runs: {type: "string", default: "5"},
  ngram: {type: "string", default: "3"},
  "draft-max": {type: "string", default: "8"},
  tokens: {type: "string", default: "256"},
  peers: {type: "string"},
});
const threads = positiveInt("lookup_bench", usage, "--threads", opts.threads);
const runs = positiveInt("lookup_bench", usage, "--runs", opts.runs);
const ngram = positiveInt("lookup_bench", usage, "--ngram", opts.ngram);
const draftMax = positiveInt("lookup_bench", usage, "--draft-max", opts["draft-max"]);
const nTokens = positiveInt("lookup_bench", usage, "--tokens", opts.tokens);
const kTargetRepeating = 1.5, kTargetOther = 0.95;

const runnelBin = process.env.RUNNEL_BIN ?? path.join(root, "build-release/runnel");
const llamaServerBin = process.env.LLAMA_SERVER ?? path.join(root, "build-llama.cpp/build/bin/llama-server");
const llamaLookupBin = process.env.LLAMA_LOOKUP ??
    [path.join(root, "build-llama.cpp/build/bin/llama-lookup"), path.join(root, "build-llama.cpp/build-lookup/bin/llama-lookup")]
        .find((f) => existsSync(f)) ?? path.join(root, "build-llama.cpp/build/bin/llama-lookup");
const peerBins = {"llama-server": llamaServerBin, "llama-lookup": llamaLookupBin};
const peers = opts.peers === undefined ? Object.keys(peerBins).filter((p) => existsSync(peerBins[p]))
                                       : opts.peers === "none" ? [] : opts.peers.split(",");
for (const p of peers) {
  if (!(p in peerBins)) {
    console.error(`lookup_bench: --peers takes llama-server, llama-lookup or none, not '${p}'\n${usage}`);
    process.exit(2);
  }
}
// llama-lookup's prompt is the chat template that llama-server renders.
const needServer = peers.length > 0;
for (const [what, file] of [["model", opts.model], ["runnel binary", runnelBin],
                            ...(needServer ? [["llama-server", llamaServerBin]] : []),
                            ...(peers.includes("llama-lookup") ? [["llama-lookup", llamaLookupBin]] : [])]) {
  if (!existsSync(file)) {
    console.error(`lookup_bench: no ${what} at ${file} (see the header of this script)`);
    process.exit(1);
  }
}

// Replies that repeat the prompt: prompt lookup should pay here.
const kRepeating = [
  {name: "repeat", prompt: "Repeat this text exactly:\n\n" +
    "The history of the printing press begins in the fifteenth century, when Johannes Gutenberg, a goldsmith " +
    "from Mainz, combined movable metal type, oil-based ink and a wooden screw press into a system that could " +
    "produce books far faster than scribes. Within fifty years, presses had spread to more than two hundred " +
    "cities across Europe, and millions of volumes were in circulation. Scholars could compare identical copies " +
    "of a text, merchants printed price lists and contracts, and reformers distributed pamphlets to audiences " +
    "that had never owned a book."},
  {name: "spelling", prompt: "Correct the spelling in this text:\n\n" +
    "Our team met on Tuesday to disscuss the new schedual for the spring release. Everyone agreed that the " +
    "testing phase needs more time, becuase last year several bugs were only found after the launch. Maria will " +
    "write the documantation for the installer, and Ahmed will update the configuraton files for the build " +
    "servers. We also decided to move the weekly meeting to Thursday morning, so that the whole team can attend. " +
    "Please send your coments on the plan before Friday."},
  {name: "rename", prompt: "Rewrite this code with the variable x renamed to count:\n\n" +
    "def summarize(records):\n" +
    "    x = 0\n" +
    "    total = 0.0\n" +
    "    for record in records:\n" +
    "        if record.amount <= 0:\n" +
    "            continue\n" +
    "        x += 1\n" +
    "        total += record.amount\n" +
    "    if x == 0:\n" +
    "        return None\n" +
    "    average = total / x\n" +
    "    print(\"processed\", x, \"records\")\n" +
    "    return {\"count\": x, \"total\": total, \"average\": average}"},
];
// Replies that do not: prompt lookup must cost (almost) nothing here.
const kOther = [
  {name: "story", prompt: "Write a short story about a lighthouse keeper who finds a message in a bottle."},
  {name: "sky", prompt: "Explain why the sky is blue."},
  {name: "guitar", prompt: "Give me five tips for learning to play the guitar."},
];
const tasks = [...kRepeating.map((t) => ({...t, kind: "repeating"})), ...kOther.map((t) => ({...t, kind: "non-repeating"}))];

const children = [];
process.on("exit", () => { for (const c of children) if (c.exitCode === null) c.kill("SIGKILL"); });
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(130));  // runs the "exit" hook

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const {port} = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// Starts llama-server with `extra` arguments; resolves once GET /health answers 200.
async function startLlamaServer(name, extra) {
  const port = await freePort();
  const args = ["-m", opts.model, "--host", "127.0.0.1", "--port", String(port), "-t", String(threads), "-tb",
                String(threads), "-c", "4096", "-np", "1", "--no-webui", ...extra];
  const child = spawn(llamaServerBin, args, {stdio: ["ignore", "ignore", "pipe"]});
  children.push(child);
  let log = "";
  child.stderr.on("data", (d) => { log = (log + d).slice(-20000); });
  const url = `http://127.0.0.1:${port}`;
  for (const t0 = Date.now();;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode} before serving:\n${log}`);
    if (Date.now() - t0 > 300_000) throw new Error(`${name} did not answer /health in 300 s:\n${log}`);
    try {
      if ((await fetch(`${url}/health`)).status === 200) return {url, child};
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function postJson(url, body) {
  const res = await fetch(url, {method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify(body)});
  const text = await res.text();
  if (!res.ok) throw new Error(`POST ${url}: ${res.status} ${text}`);
  return JSON.parse(text);
}

// One generation: {n, ms, drafted, accepted, text, nPrompt}.
async function runnelOnce(task, lookup) {
  const args = ["run", "-m", opts.model, "--chat", "-p", task.prompt, "-n", String(nTokens), "--temp", "0",
                "-t", String(threads), "--lookup-ngram", lookup ? String(ngram) : "0"];
  if (lookup) args.push("--draft-max", String(draftMax));
  const {stdout, stderr} = await run(runnelBin, args, {maxBuffer: 1 << 24});
  const prompt = stderr.match(/^prompt: (\d+) tokens/m);
  const gen = stderr.match(/^generation: (\d+) tokens in ([\d.]+) ms/m);
  if (!prompt || !gen) throw new Error(`runnel run printed no prompt/generation line:\n${stderr}`);
  const spec = stderr.match(/^speculation: (\d+) draft tokens, (\d+) accepted/m);
  if (lookup && !spec) throw new Error(`runnel run --lookup-ngram printed no speculation line:\n${stderr}`);
  return {n: Number(gen[1]), ms: Number(gen[2]), drafted: spec ? Number(spec[1]) : 0,
          accepted: spec ? Number(spec[2]) : 0, text: stdout, nPrompt: Number(prompt[1])};
}

async function llamaServerOnce(server, task) {
  const r = await postJson(`${server.url}/completion`, {prompt: task.templated, n_predict: nTokens, temperature: 0,
                                                        cache_prompt: false});
  const t = r.timings;
  return {n: t.predicted_n, ms: t.predicted_ms, drafted: t.draft_n ?? 0, accepted: t.draft_n_accepted ?? 0,
          text: r.content, nPrompt: t.prompt_n};
}

async function llamaLookupOnce(task, lookup) {
  // -n: it stops once it has generated more than n tokens.
  const args = ["-m", opts.model, "-p", task.templated, "-n", String(nTokens - 1), "-t", String(threads), "-tb",
                String(threads), "-c", "4096", "--temp", "0", "--spec-draft-n-max", lookup ? String(draftMax) : "0"];
  const {stdout, stderr} = await run(llamaLookupBin, args, {maxBuffer: 1 << 24});
  const dec = stderr.match(/decoded\s+(\d+) tokens in\s+([\d.]+) seconds/);
  const drafted = stderr.match(/n_drafted\s*=\s*(\d+)/), accepted = stderr.match(/n_accept\s*=\s*(\d+)/);
  if (!dec || !drafted || !accepted) throw new Error(`llama-lookup printed no decoded/n_drafted/n_accept line:\n${stderr}`);
  // stdout: the prompt's pieces, then the reply's (its end token's text included).
  const at = stdout.lastIndexOf("<|im_start|>assistant\n");
  let text = at >= 0 ? stdout.slice(at + "<|im_start|>assistant\n".length) : stdout;
  text = text.replace(/\s+$/, "").replace(/(<\|im_end\|>|<\|endoftext\|>)$/, "");
  return {n: Number(dec[1]), ms: Number(dec[2]) * 1000, drafted: Number(drafted[1]), accepted: Number(accepted[1]),
          text, nPrompt: NaN};
}

const cpuName = cpus()[0]?.model ?? "unknown CPU";
const {stdout: runnelVersion} = await run(runnelBin, ["version"]);
let base = null, spec = null, llamaVersion = "";
if (needServer) {
  console.error(`lookup_bench: starting llama-server without and with --spec-type ngram-simple`);
  const out = await run(llamaServerBin, ["--version"]).catch((e) => e);
  llamaVersion = `${out.stdout ?? ""}${out.stderr ?? ""}`.match(/version: .*/)?.[0] ?? "version unknown";
  base = await startLlamaServer("llama-server", []);
  if (peers.includes("llama-server")) {
    spec = await startLlamaServer("llama-server (ngram-simple)",
                                  ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", String(ngram),
                                   "--spec-ngram-simple-size-m", String(draftMax)]);
  }
  for (const t of tasks) {
    t.templated = (await postJson(`${base.url}/apply-template`, {messages: [{role: "user", content: t.prompt}]})).prompt;
  }
}

// Arms: an engine with or without lookup. `once(task)` -> one generation.
const arms = [
  {engine: "runnel", lookup: false, once: (t) => runnelOnce(t, false)},
  {engine: "runnel", lookup: true, once: (t) => runnelOnce(t, true)},
];
if (peers.includes("llama-server")) {
  arms.push({engine: "llama-server", lookup: false, once: (t) => llamaServerOnce(base, t)},
            {engine: "llama-server", lookup: true, once: (t) => llamaServerOnce(spec, t)});
}
if (peers.includes("llama-lookup")) {
  arms.push({engine: "llama-lookup", lookup: false, once: (t) => llamaLookupOnce(t, false)},
            {engine: "llama-lookup", lookup: true, once: (t) => llamaLookupOnce(t, true)});
}
const engines = [...new Set(arms.map((a) => a.engine))];
const armKey = (a) => `${a.engine}/${a.lookup ? "on" : "off"}`;
// results[task.name][armKey] = [{n, ms, ...}, ...]
const results = Object.fromEntries(tasks.map((t) => [t.name, Object.fromEntries(arms.map((a) => [armKey(a), []]))]));

const loadBefore = loadavg()[0];
const t0 = Date.now();
for (const a of arms) await a.once(tasks[0]);  // warm-ups: page the weights in
for (let i = 0; i < runs; ++i) {
  for (const task of tasks) {
    for (const a of i % 2 ? [...arms].reverse() : arms) {
      const r = await a.once(task);
      results[task.name][armKey(a)].push(r);
      console.error(`run ${i + 1}/${runs} ${task.name} ${armKey(a)}: ${r.n} tokens, ${(1000 * r.n / r.ms).toFixed(1)} tok/s` +
                    (a.lookup ? `, ${r.accepted}/${r.drafted} drafts accepted` : ""));
    }
  }
}
const minutes = (Date.now() - t0) / 60000;
const loadAfter = loadavg()[0];
for (const s of [base, spec]) if (s) s.child.kill("SIGTERM");

// The with/without texts of one engine must be equal (greedy), and every run of an arm
// must give the same text. llama-lookup may run past the token limit by a draft, so there
// one text being a prefix of the other counts as equal.
const mismatches = [];
for (const task of tasks) {
  for (const engine of engines) {
    const off = results[task.name][`${engine}/off`], on = results[task.name][`${engine}/on`];
    const texts = [...new Set([...off, ...on].map((r) => r.text))];
    if (texts.length === 1) continue;
    const prefixOnly = engine === "llama-lookup" && texts.every((a) => texts.every((b) => a.startsWith(b) || b.startsWith(a)));
    if (prefixOnly) continue;
    mismatches.push({task: task.name, engine, texts});
  }
}

const rate = (r) => 1000 * r.n / r.ms;
// Per prompt and engine: median tok/s without and with, their ratio, acceptance (drafts
// are the same in every greedy run: the totals over runs).
function summary(rs) {
  const off = rs.off, on = rs.on;
  const drafted = on.reduce((s, r) => s + r.drafted, 0), accepted = on.reduce((s, r) => s + r.accepted, 0);
  const mOff = median(off.map(rate)), mOn = median(on.map(rate));
  return {n: median(on.map((r) => r.n)), off: mOff, on: mOn, ratio: mOn / mOff,
          perRunRatio: median(on.map((r, i) => rate(r) / rate(off[i]))),
          drafted: drafted / on.length, accepted: accepted / on.length};
}
// Per task kind: each run's tokens / time over the kind's prompts (as if asked one after
// the other), median over runs.
function kindSummary(kind, engine) {
  const ks = tasks.filter((t) => t.kind === kind);
  const agg = (side) => median(Array.from({length: runs}, (_, i) => {
    const rs = ks.map((t) => results[t.name][`${engine}/${side}`][i]);
    return 1000 * rs.reduce((s, r) => s + r.n, 0) / rs.reduce((s, r) => s + r.ms, 0);
  }));
  const per = ks.map((t) => summary(rowsOf(t, engine)));
  const drafted = per.reduce((s, p) => s + p.drafted, 0), accepted = per.reduce((s, p) => s + p.accepted, 0);
  const off = agg("off"), on = agg("on");
  return {off, on, ratio: on / off, minRatio: Math.min(...per.map((p) => p.ratio)), drafted, accepted};
}
const rowsOf = (task, engine) => ({off: results[task.name][`${engine}/off`], on: results[task.name][`${engine}/on`]});
const pct = (a, d) => (d > 0 ? `${(100 * a / d).toFixed(0)}%` : "-");

console.log(`model ${opts.model}; ${threads} thread(s); greedy; at most ${nTokens} tokens a reply; ` +
            `lookup n-gram ${ngram}, at most ${draftMax} drafts; median of ${runs} interleaved runs (${minutes.toFixed(1)} min)`);
console.log(`CPU ${cpuName}, ${cpus().length} logical CPUs; load average (1 min) ${loadBefore.toFixed(2)} before, ` +
            `${loadAfter.toFixed(2)} after`);
console.log(`runnel ${runnelVersion.trim()}` + (needServer ? `; llama.cpp ${llamaVersion}` : ""));
if (peers.includes("llama-server")) {
  console.log(`llama-server: --spec-type ngram-simple --spec-ngram-simple-size-n ${ngram} --spec-ngram-simple-size-m ${draftMax}` +
              ` against a plain llama-server`);
}
if (peers.includes("llama-lookup")) {
  console.log(`llama-lookup (${llamaLookupBin}): --spec-draft-n-max ${draftMax} against --spec-draft-n-max 0`);
}
console.log("\nper prompt: tok/s without / with lookup, ratio (median of per-run ratios), drafts accepted (per reply)\n");
console.log(`| task | prompt | tokens | ${engines.map((e) => `${e} off | ${e} on | ${e} ratio | ${e} accepted`).join(" | ")} |`);
console.log(`| --- | --- | ---: | ${engines.map(() => "---: | ---: | ---: | ---:").join(" | ")} |`);
for (const task of tasks) {
  const cells = engines.map((e) => {
    const s = summary(rowsOf(task, e));
    return `${s.off.toFixed(1)} | ${s.on.toFixed(1)} | ${s.ratio.toFixed(2)}x (${s.perRunRatio.toFixed(2)}x) | ` +
           `${s.accepted.toFixed(0)}/${s.drafted.toFixed(0)} ${pct(s.accepted, s.drafted)}`;
  });
  console.log(`| ${task.kind} | ${task.name} | ${summary(rowsOf(task, "runnel")).n} | ${cells.join(" | ")} |`);
}
// ratio = tokens per forward pass / cost of a pass in single-token decodes; passes with
// lookup = generated - accepted (each pass yields its accepted drafts and one more token).
console.log("\nwhere the ratio comes from: tokens per forward pass with lookup, and the time of such a pass " +
            "(a verification of drafts, or a plain decode) in single-token decodes without lookup\n");
console.log(`| task | prompt | ${engines.map((e) => `${e} tokens/pass | ${e} pass cost`).join(" | ")} |`);
console.log(`| --- | --- | ${engines.map(() => "---: | ---:").join(" | ")} |`);
for (const task of tasks) {
  const cells = engines.map((e) => {
    const {off, on} = rowsOf(task, e);
    const perPass = median(on.map((r) => r.n / (r.n - r.accepted)));
    const cost = median(on.map((r) => r.ms / (r.n - r.accepted))) / median(off.map((r) => r.ms / r.n));
    return `${perPass.toFixed(2)} | ${cost.toFixed(2)}x`;
  });
  console.log(`| ${task.kind} | ${task.name} | ${cells.join(" | ")} |`);
}
console.log("\nper task kind: tok/s over the kind's prompts, median over runs; target on the ratio\n");
console.log("| task | engine | tok/s off | tok/s on | ratio | lowest prompt | accepted | target | met |");
console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |");
const missed = [];
for (const kind of ["repeating", "non-repeating"]) {
  for (const engine of engines) {
    const k = kindSummary(kind, engine);
    const target = kind === "repeating" ? `>= ${kTargetRepeating}x` : `every prompt >= ${kTargetOther}x`;
    const met = kind === "repeating" ? k.ratio >= kTargetRepeating : k.minRatio >= kTargetOther;
    if (engine === "runnel" && !met) missed.push(`${kind}: ${k.ratio.toFixed(2)}x (lowest prompt ${k.minRatio.toFixed(2)}x)`);
    console.log(`| ${kind} | ${engine} | ${k.off.toFixed(1)} | ${k.on.toFixed(1)} | ${k.ratio.toFixed(2)}x | ` +
                `${k.minRatio.toFixed(2)}x | ${pct(k.accepted, k.drafted)} | ${target} | ${met ? "yes" : "NO"} |`);
  }
}
if (needServer) {
  const np = tasks.map((t) => `${t.name} ${results[t.name]["runnel/off"][0].nPrompt}` +
                              (peers.includes("llama-server") ? `/${results[t.name]["llama-server/off"][0].nPrompt}` : ""));
  console.log(`\nprompt tokens runnel${peers.includes("llama-server") ? "/llama-server" : ""}: ${np.join(", ")}`);
  if (peers.includes("llama-server")) {
    // Different kernels round differently: greedy replies part at the first near-tie.
    const common = (a, b) => { let i = 0; while (i < a.length && a[i] === b[i]) ++i; return i; };
    const cmp = tasks.map((t) => {
      const a = results[t.name]["runnel/off"][0].text.trimEnd(), b = results[t.name]["llama-server/off"][0].text.trimEnd();
      return a === b ? `${t.name} same` : `${t.name} first ${common(a, b)} of ${a.length}/${b.length} chars`;
    });
    console.log(`runnel's reply against llama-server's (without lookup): ${cmp.join(", ")}`);
  }
}
console.log(missed.length ? `\nTARGET MISSED by runnel: ${missed.join("; ")}` : "\nrunnel meets both targets");
if (mismatches.length) {
  console.log(`\nMISMATCH: greedy replies differ with and without lookup (or between runs):`);
  for (const m of mismatches) {
    const [a, b] = m.texts;
    let at = 0;
    while (at < a.length && a[at] === b[at]) ++at;
    const where = (t) => JSON.stringify(t.slice(Math.max(0, at - 60), at + 60));
    const arms = (t) => ["off", "on"].filter((side) => results[m.task][`${m.engine}/${side}`].some((r) => r.text === t));
    console.log(`  ${m.engine} / ${m.task}: ${m.texts.length} different texts, the first two part at char ${at}:`);
    console.log(`    ${arms(a).join("+")}: ...${where(a)}`);
    console.log(`    ${arms(b).join("+")}: ...${where(b)}`);
  }
}
const ok = engines.filter((e) => !mismatches.some((m) => m.engine === e));
if (ok.length) console.log(`greedy replies identical with and without lookup, in every run, for ${ok.join(", ")}`);
// Only runnel's own mismatch fails the run; a peer's is reported above.
process.exit(mismatches.some((m) => m.engine === "runnel") ? 1 : 0);
