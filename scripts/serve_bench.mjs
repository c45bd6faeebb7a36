#!/usr/bin/env node
// Concurrent streaming clients against `runnel serve` (continuous batching: every busy
// slot decodes in one forward pass, prompts read 64 tokens at a time in those passes) and
// llama.cpp's llama-server (-np N parallel slots, continuous batching), same GGUF, same
// threads. A benchmark, not a test: it prints figures.
//
//   node scripts/serve_bench.mjs [--models a.gguf,b.gguf] [--levels 1,2,4,8] [--rounds 3]
//                                [--tokens 64] [--prompt-words 96] [--threads 2] [--ctx 512]
//                                [--peer llama-server|none] [--llama-args '--poll 0']
//                                [--runnel-args='--lookup-ngram 0']
//   env: RUNNEL_BIN (default build-release/runnel), LLAMA_SERVER (default
//   build-llama.cpp/build/bin/llama-server, built by scripts/build_llama_cpp.sh llama-server)
// Default model: models/bench/llama-1b-q4_k_m.gguf (scripts/gen_bench_models.sh 1b q4_k_m).
//
// For each concurrency level C, both servers are started with C slots (runnel --slots C -c
// CTX; llama-server -np C -c C*CTX, so each slot holds CTX tokens). A round fires C
// streamed /v1/completions requests at once, each with its own prompt (--prompt-words
// random common words, about one token each, no shared prefix), greedy, exactly --tokens
// generated tokens (runnel: the model's end tokens banned by logit_bias; llama-server:
// ignore_eos). Per request: time to first token (request sent -> first streamed text) and
// the time between its first and last token; per round: aggregate generated tok/s = all
// generated tokens / the round's wall time (first request sent -> last stream closed).
// One warm-up round per server and level, then --rounds rounds that alternate which server
// goes first; aggregate tok/s is the median over rounds, TTFT p50 / p99 are over every
// request of every round at that level (nearest rank: with few samples p99 is the max).
// A second table splits off decoding: each stream's time a token (first to last token),
// the decode rate of the C streams while all of them decode (every prompt read: what a
// batched pass yields against a single stream, and the ceiling that aggregate tok/s
// approaches as --tokens grows against --prompt-words), each server's CPU time a
// generated token, and from runnel's /metrics (runnel_batched_passes_total /
// _tokens_total) the mean number of streams decoded per batched pass. Ends with the
// issue's targets: 4 streams >= 3x one stream, aggregate tok/s >= llama-server's at every
// level, TTFT p99 below llama-server's.
import {execFile, spawn} from "node:child_process";
import {existsSync, readFileSync} from "node:fs";
import net from "node:net";
import {loadavg} from "node:os";
import path from "node:path";
import {promisify} from "node:util";
import {fileURLToPath} from "node:url";

import {median, parseCli, positiveInt, positiveIntList} from "./lib/cli.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const run = promisify(execFile);
const usage = "usage: node scripts/serve_bench.mjs [--models a.gguf,b.gguf] [--levels 1,2,4,8] [--rounds 3] " +
              "[--tokens 64] [--prompt-words 96] [--threads 2] [--ctx 512] [--peer llama-server|none] " +
              "[--llama-args '--poll 0'] [--runnel-args='--lookup-ngram 0']";
const opts = parseCli("serve_bench", usage, {
  models: {type: "string", default: path.join(root, "models/bench/llama-1b-q4_k_m.gguf")},
  levels: {type: "string", default: "1,2,4,8"},
  rounds: {type: "string", default: "3"},
  tokens: {type: "string", default: "64"},
  "prompt-words": {type: "string", default: "96"},
  threads: {type: "string", default: "2"},
  ctx: {type: "string", default: "512"},
  peer: {type: "string", default: "llama-server"},
  "llama-args": {type: "string", default: ""},
  "runnel-args": {type: "string", default: ""},
});
const levels = positiveIntList("serve_bench", usage, "--levels", opts.levels);
const rounds = positiveInt("serve_bench", usage, "--rounds", opts.rounds);
const nTokens = positiveInt("serve_bench", usage, "--tokens", opts.tokens);
const nWords = positiveInt("serve_bench", usage, "--prompt-words", opts["prompt-words"]);
const threads = positiveInt("serve_bench", usage, "--threads", opts.threads);
const ctx = positiveInt("serve_bench", usage, "--ctx", opts.ctx);
if (opts.peer !== "llama-server" && opts.peer !== "none") {
  console.error(`serve_bench: --peer is llama-server or none, not '${opts.peer}'\n${usage}`);
  process.exit(2);
}
const withPeer = opts.peer === "llama-server";
const models = opts.models.split(",");
const runnelBin = process.env.RUNNEL_BIN ?? path.join(root, "build-release/runnel");
const llamaServerBin = process.env.LLAMA_SERVER ?? path.join(root, "build-llama.cpp/build/bin/llama-server");
const needed = [["runnel binary", runnelBin, "cmake --build build-release --target runnel"],
                ...models.map((m) => ["model", m, "scripts/gen_bench_models.sh"])];
if (withPeer) needed.push(["llama-server", llamaServerBin, "scripts/build_llama_cpp.sh llama-server"]);
for (const [what, file, hint] of needed) {
  if (!existsSync(file)) {
    console.error(`serve_bench: no ${what} at ${file} (${hint})`);
    process.exit(1);
  }
}

// Common words, most of them one token with their leading space in BPE vocabularies.
const kWords = ("time year people way day man thing woman life child world school state family student group country " +
  "problem hand part place case week company system program question work government number night point home water " +
  "room mother area money story fact month lot right study book eye job word business issue side kind head house " +
  "service friend father power hour game line end member law car city community name president team minute idea kid " +
  "body information back parent face others level office door health person art war history party result change " +
  "morning reason research girl guy moment air teacher force education foot boy age policy music market sense nation " +
  "plan college interest death experience effect class control care field development role effort rate heart drug " +
  "show leader light voice wife police mind price report decision son view relationship town road arm difference " +
  "value building action model season society tax director position player record paper space ground form event " +
  "official matter center couple site project activity star table need court oil situation cost industry figure " +
  "street image phone data picture practice piece land product doctor wall patient worker news test movie north love " +
  "support technology step baby computer type attention film tree source organization hair window evidence river").split(" ");
// Texts of end-of-generation tokens across common vocabularies; those that are one token
// of the model are banned in runnel's requests (llama-server: ignore_eos).
const kEndTexts = ["<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<|end_of_text|>", "<|eom_id|>", "<end_of_turn>",
                   "<|end|>", "</s>", "<eos>"];

const children = [];
process.on("exit", () => { for (const c of children) if (c.exitCode === null) c.kill("SIGKILL"); });
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(130));

// Distinct prompts: words drawn by a xorshift generator seeded by `seed`, capitalised
// first word, a full stop every 12 words.
function makePrompt(seed) {
  let s = (seed * 2654435761 + 12345) >>> 0 || 1;
  const words = [];
  for (let i = 0; i < nWords; ++i) {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    const w = kWords[s % kWords.length];
    words.push((i % 12 === 0 ? w[0].toUpperCase() + w.slice(1) : w) + (i % 12 === 11 ? "." : ""));
  }
  return words.join(" ");
}

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

// Starts `bin args` and resolves once GET /health answers 200.
async function startServer(name, bin, args, port, timeoutMs = 600_000) {
  const child = spawn(bin, args, {stdio: ["ignore", "ignore", "pipe"]});
  children.push(child);
  let log = "";
  child.stderr.on("data", (d) => { log = (log + d).slice(-20000); });
  const url = `http://127.0.0.1:${port}`;
  const t0 = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode} before serving:\n${log}`);
    if (Date.now() - t0 > timeoutMs) throw new Error(`${name} did not answer /health in ${timeoutMs} ms:\n${log}`);
    try {
      if ((await fetch(`${url}/health`)).status === 200) return {name, url, child};
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function stopServer(server) {
  if (!server || server.child.exitCode !== null) return;
  const exited = new Promise((r) => server.child.on("exit", r));
  server.child.kill("SIGTERM");
  await exited;
}

// CPU time (user + system, all threads) of a process so far, in ms (/proc/PID/stat
// fields 14 and 15, in clock ticks of 10 ms).
function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ").pop().split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function runnelMetrics(server) {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const value = (name) => Number(text.match(new RegExp(`^${name} (\\S+)$`, "m"))?.[1] ?? NaN);
  return {passes: value("runnel_batched_passes_total"), tokens: value("runnel_batched_tokens_total")};
}

// The model's end tokens (runnel tokenize: texts that are one special token), with the
// GGUF's eos id.
async function endTokenIds(model) {
  const ids = new Set();
  for (const text of kEndTexts) {
    const {stdout} = await run(runnelBin, ["tokenize", "-m", model, "-p", text, "--special", "--no-bos", "--ids"]);
    const got = stdout.trim().split(/\s+/).filter(Boolean);
    if (got.length === 1) ids.add(Number(got[0]));
  }
  const {stdout} = await run(runnelBin, ["inspect", model], {maxBuffer: 1 << 26});
  const eos = stdout.match(/tokenizer\.ggml\.eos_token_id = (\d+)/);
  if (eos) ids.add(Number(eos[1]));
  return [...ids];
}

// One streamed /v1/completions request sent at t0: {ttft, decodeMs (first to last
// token), n, nPrompt, end}.
async function streamOne(server, prompt, endIds, t0) {
  const body = {prompt, max_tokens: nTokens, temperature: 0, stream: true, stream_options: {include_usage: true}};
  if (server.name === "llama-server") {
    body.ignore_eos = true;
  } else {
    body.logit_bias = Object.fromEntries(endIds.map((id) => [String(id), -100]));
  }
  const res = await fetch(`${server.url}/v1/completions`, {method: "POST", headers: {"content-type": "application/json"},
                                                            body: JSON.stringify(body)});
  if (!res.ok) throw new Error(`${server.name}: POST /v1/completions: ${res.status} ${await res.text()}`);
  const decoder = new TextDecoder();
  let buffered = "", first = null, last = null, usage = null;
  const times = [];  // arrival of each streamed event that carries text (about one a token)
  for await (const chunk of res.body) {
    const now = performance.now();
    buffered += decoder.decode(chunk, {stream: true});
    let at;
    while ((at = buffered.indexOf("\n\n")) >= 0) {
      const event = buffered.slice(0, at);
      buffered = buffered.slice(at + 2);
      for (const line of event.split("\n")) {
        if (!line.startsWith("data:")) continue;
        const data = line.slice(5).trim();
        if (data === "[DONE]") continue;
        const j = JSON.parse(data);
        if (j.error) throw new Error(`${server.name}: ${JSON.stringify(j.error)}`);
        if ((j.choices?.[0]?.text ?? "") !== "") {
          first ??= now;
          last = now;
          times.push(now);
        }
        usage = j.usage ?? usage;
      }
    }
  }
  const end = performance.now();
  if (!usage) throw new Error(`${server.name}: the stream carried no usage`);
  if (usage.completion_tokens !== nTokens) {
    throw new Error(`${server.name}: generated ${usage.completion_tokens} tokens, expected ${nTokens}`);
  }
  return {ttft: first - t0, first, last, times, decodeMs: last - first, n: usage.completion_tokens,
          nPrompt: usage.prompt_tokens, end};
}

// C requests at once on `server`; the other server's CPU time is watched (it should idle).
async function runRound(server, other, prompts, endIds) {
  const before = server.name === "runnel" ? await runnelMetrics(server) : null;
  const cpu0 = cpuMs(server.child.pid), otherCpu0 = other ? cpuMs(other.child.pid) : 0;
  const t0 = performance.now();
  const reqs = await Promise.all(prompts.map((p) => streamOne(server, p, endIds, t0)));
  const wallMs = Math.max(...reqs.map((r) => r.end)) - t0;
  const nGen = reqs.reduce((a, r) => a + r.n, 0);
  // The window in which every stream decodes: from the last first token (no prompt left
  // to read) to the first last token. Its streamed events / its length = the decode rate
  // of C streams together (events that carry several tokens make it an underestimate).
  const w0 = Math.max(...reqs.map((q) => q.first)), w1 = Math.min(...reqs.map((q) => q.last));
  const inWindow = reqs.reduce((a, q) => a + q.times.filter((t) => t > w0 && t <= w1).length, 0);
  const out = {reqs, wallMs, aggTps: nGen / (wallMs / 1000), cpuMsPerToken: (cpuMs(server.child.pid) - cpu0) / nGen,
               otherCpuMs: other ? cpuMs(other.child.pid) - otherCpu0 : 0,
               decodeTps: w1 - w0 > 0 && inWindow >= 2 * prompts.length ? inWindow / ((w1 - w0) / 1000) : NaN,
               eventsPerToken: reqs.reduce((a, q) => a + q.times.length, 0) / nGen};
  if (before) {
    const after = await runnelMetrics(server);
    out.passes = after.passes - before.passes;
    out.batchedTokens = after.tokens - before.tokens;
  }
  return out;
}

function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.max(0, Math.ceil((p / 100) * s.length) - 1)];
}

async function benchLevel(model, level, endIds, seedBase) {
  const runnelPort = await freePort();
  const runnel = await startServer("runnel", runnelBin, [
    "serve", "-m", model, "--host", "127.0.0.1", "--port", String(runnelPort), "-t", String(threads), "-c", String(ctx),
    "--slots", String(level), "--queue", String(Math.max(8, level)), "--log-disable",
    ...opts["runnel-args"].split(" ").filter(Boolean)], runnelPort);
  let llama = null;
  if (withPeer) {
    const llamaPort = await freePort();
    llama = await startServer("llama-server", llamaServerBin, [
      "-m", model, "--host", "127.0.0.1", "--port", String(llamaPort), "-t", String(threads),
      "-c", String(level * ctx), "-np", String(level), "--no-webui", ...opts["llama-args"].split(" ").filter(Boolean)],
    llamaPort);
  }
  const servers = [runnel, llama].filter(Boolean);
  const results = Object.fromEntries(servers.map((s) => [s.name, []]));
  const loadBefore = loadavg()[0];
  // Round 0 is the warm-up; each round's prompts are new (no prefix left in any slot),
  // and the same for both servers.
  for (let r = 0; r <= rounds; ++r) {
    const prompts = Array.from({length: level}, (_, i) => makePrompt(seedBase + r * 64 + i));
    for (const server of r % 2 ? servers : [...servers].reverse()) {
      const other = servers.find((s) => s !== server);
      const res = await runRound(server, other, prompts, endIds);
      const ttfts = res.reqs.map((q) => q.ttft);
      console.error(`${path.basename(model)} C=${level} ${r === 0 ? "warm-up" : `round ${r}/${rounds}`} ` +
                    `${server.name}: ${res.aggTps.toFixed(2)} tok/s aggregate, TTFT ${Math.min(...ttfts).toFixed(0)}-` +
                    `${Math.max(...ttfts).toFixed(0)} ms, wall ${(res.wallMs / 1000).toFixed(2)} s` +
                    (res.passes !== undefined ? `, ${res.passes} batched passes of ${res.batchedTokens} tokens` : "") +
                    (other ? `; idle ${other.name} used ${res.otherCpuMs} ms CPU` : ""));
      if (r > 0) results[server.name].push(res);
    }
  }
  const loadAfter = loadavg()[0];
  for (const s of servers) await stopServer(s);
  const summarise = (list) => {
    const reqs = list.flatMap((x) => x.reqs);
    const ttfts = reqs.map((q) => q.ttft);
    return {
      aggTps: median(list.map((x) => x.aggTps)),
      ttftP50: percentile(ttfts, 50),
      ttftP99: percentile(ttfts, 99),
      samples: ttfts.length,
      streamMsPerToken: median(reqs.map((q) => q.decodeMs / (q.n - 1))),
      decodeTps: median(list.map((x) => x.decodeTps).filter((x) => !Number.isNaN(x))),
      eventsPerToken: Math.min(...list.map((x) => x.eventsPerToken)),
      cpuMsPerToken: median(list.map((x) => x.cpuMsPerToken)),
      nPrompt: [Math.min(...reqs.map((q) => q.nPrompt)), Math.max(...reqs.map((q) => q.nPrompt))],
      width: list[0].passes !== undefined
          ? list.reduce((a, x) => a + x.batchedTokens, 0) / Math.max(1, list.reduce((a, x) => a + x.passes, 0)) : NaN,
      batchedShare: list[0].passes !== undefined
          ? list.reduce((a, x) => a + x.batchedTokens, 0) / list.reduce((a, x) => a + x.reqs.length * nTokens, 0) : NaN,
    };
  };
  return {level, runnel: summarise(results.runnel), llama: llama ? summarise(results["llama-server"]) : null,
          loadBefore, loadAfter};
}

const {stdout: runnelVersion} = await run(runnelBin, ["version"]);
let llamaVersion = "";
if (withPeer) {
  const {stdout, stderr} = await run(llamaServerBin, ["--version"])
      .catch((e) => ({stdout: e.stdout ?? "", stderr: e.stderr ?? ""}));
  llamaVersion = (stdout + stderr).match(/version: .*/)?.[0] ?? "version unknown";
}
const started = Date.now();
const tables = [];
for (const [mi, model] of models.entries()) {
  const endIds = await endTokenIds(model);
  const rows = [];
  for (const [li, level] of levels.entries()) {
    rows.push(await benchLevel(model, level, endIds, 100_000 * (mi + 1) + 1000 * li));
  }
  tables.push({model, endIds, rows});
}

const f1 = (x) => x.toFixed(1), f2 = (x) => x.toFixed(2), ms = (x) => x.toFixed(0);
console.log(`${threads} thread(s); ${nTokens} generated tokens a request (end tokens banned / ignore_eos), temperature 0; ` +
            `prompts of ${nWords} random words; ${ctx} tokens of context a slot; median of ${rounds} rounds a level ` +
            `(servers alternating), TTFT percentiles over all requests of those rounds; ` +
            `${((Date.now() - started) / 60000).toFixed(1)} min`);
console.log(`runnel ${runnelVersion.trim()}${opts["runnel-args"] ? ` (${opts["runnel-args"]})` : ""}` + (withPeer ? `; llama-server ${llamaVersion} (-np C -c C*${ctx}` +
            `${opts["llama-args"] ? ` ${opts["llama-args"]}` : ""})` : ""));
for (const {model, endIds, rows} of tables) {
  const nPrompt = rows.flatMap((r) => r.runnel.nPrompt);
  console.log(`\n${model}: prompts ${Math.min(...nPrompt)}-${Math.max(...nPrompt)} tokens; runnel's banned end ` +
              `tokens ${endIds.join(", ")}; load average (1 min) ` +
              rows.map((r) => `${r.loadBefore.toFixed(1)}-${r.loadAfter.toFixed(1)}`).join(", ") + " by level\n");
  if (withPeer) {
    console.log("| streams | runnel agg tok/s | llama-server agg tok/s | ratio | runnel TTFT p50 / p99 ms | " +
                "llama-server TTFT p50 / p99 ms | runnel scaling | llama-server scaling |");
    console.log("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  } else {
    console.log("| streams | runnel agg tok/s | runnel TTFT p50 / p99 ms | runnel scaling |");
    console.log("| ---: | ---: | ---: | ---: |");
  }
  const base = rows.find((r) => r.level === 1);
  const scale = (r, side) => (base ? `${f2(r[side].aggTps / base[side].aggTps)}x` : "");
  for (const r of rows) {
    const R = r.runnel, L = r.llama;
    if (withPeer) {
      console.log(`| ${r.level} | ${f2(R.aggTps)} | ${f2(L.aggTps)} | ${f2(R.aggTps / L.aggTps)}x | ` +
                  `${ms(R.ttftP50)} / ${ms(R.ttftP99)} | ${ms(L.ttftP50)} / ${ms(L.ttftP99)} | ${scale(r, "runnel")} | ` +
                  `${scale(r, "llama")} |`);
    } else {
      console.log(`| ${r.level} | ${f2(R.aggTps)} | ${ms(R.ttftP50)} / ${ms(R.ttftP99)} | ${scale(r, "runnel")} |`);
    }
  }
  // Decoding: "ms/token a stream" runs from a stream's first to its last token (other
  // streams' prompt chunks that run in between count in it); "decode tok/s" is the rate of
  // all C streams while every one of them decodes (see runRound), "-" when that window
  // is empty (a stream ended before the last one started).
  const decodeTps = (side) => side.decodeTps;
  const num = (fmt) => (x) => (Number.isFinite(x) ? fmt(x) : "-");
  const pair = (a, b, fmt) => (b === undefined ? num(fmt)(a) : `${num(fmt)(a)} / ${num(fmt)(b)}`);
  const side = withPeer ? " runnel / llama-server" : " runnel";
  console.log(`\n| streams | TTFT samples | ms/token a stream${side} | decode tok/s, all streams decoding${side} | ` +
              `decode scaling${side} | CPU ms/token (all threads)${side} | runnel streams a batched pass | ` +
              "runnel tokens in batched passes |");
  console.log(`|${" ---: |".repeat(8)}`);
  for (const r of rows) {
    const R = r.runnel, L = r.llama;
    const decodeScale = (sd, b) => {
      const x = b ? decodeTps(sd) / decodeTps(b) : NaN;
      return Number.isFinite(x) ? `${f2(x)}x` : "-";
    };
    console.log(`| ${r.level} | ${R.samples} | ${pair(R.streamMsPerToken, L?.streamMsPerToken, f1)} | ` +
                `${pair(decodeTps(R), L ? decodeTps(L) : undefined, f1)} | ` +
                `${decodeScale(R, base?.runnel)}${L ? ` / ${decodeScale(L, base?.llama)}` : ""} | ` +
                `${pair(R.cpuMsPerToken, L?.cpuMsPerToken, f1)} | ` +
                `${Number.isNaN(R.width) || R.width === 0 ? "-" : f2(R.width)} | ${(100 * R.batchedShare).toFixed(0)}% |`);
  }
  const merged = rows.flatMap((r) => [r.runnel, r.llama].filter(Boolean)).map((x) => x.eventsPerToken);
  if (Math.min(...merged) < 0.95) {
    console.log(`\nnote: some streamed events carried several tokens (events / tokens down to ` +
                `${f2(Math.min(...merged))}): decode tok/s above is an underestimate there`);
  }
  // The issue's targets.
  const at4 = rows.find((r) => r.level === 4);
  const checks = [];
  if (base && at4) {
    const s = at4.runnel.aggTps / base.runnel.aggTps;
    checks.push(`4 streams >= 3x one stream: ${f2(s)}x ${s >= 3 ? "MET" : "MISSED"}`);
  }
  if (withPeer) {
    const slow = rows.filter((r) => r.runnel.aggTps < r.llama.aggTps).map((r) => r.level);
    checks.push(`aggregate tok/s >= llama-server's at every level: ${slow.length ? `MISSED at ${slow.join(", ")}` : "MET"}`);
    const late = rows.filter((r) => r.runnel.ttftP99 >= r.llama.ttftP99).map((r) => r.level);
    checks.push(`TTFT p99 below llama-server's: ${late.length ? `MISSED at ${late.join(", ")}` : "MET"}`);
  }
  if (checks.length) console.log(`\ntargets: ${checks.join("; ")}`);
}
process.exit(0);
