#!/usr/bin/env node
// The cost of constrained decoding: runnel serve vs llama.cpp's llama-server, same GGUF,
// same threads, same prompt, same nested JSON schema (llama-server's `json_schema` field
// on both), greedy (temperature 0). A benchmark, not a test: it prints figures.
//
//   node scripts/grammar_bench.mjs [--model FILE] [--runs 5] [--tokens 96] [--threads 2]
//                                  [--schema FILE] [--no-cli] [--llama-args='--poll 0']
//   env: RUNNEL_BIN (default build-release/runnel), LLAMA_SERVER (default
//   build-llama.cpp/build/bin/llama-server, built by scripts/build_llama_cpp.sh llama-server)
//
// Four arms per run, interleaved so machine noise hits all alike: runnel unconstrained,
// runnel constrained, llama-server unconstrained, llama-server constrained (every other run
// in the reverse order); one warm-up of each, then medians of --runs runs. Each request is
// a streamed /v1/completions of --tokens tokens. Unconstrained ones cannot end early
// (runnel: the end tokens banned by logit_bias; llama-server: ignore_eos); constrained ones
// end where the schema's JSON is complete, so per-token time is the figure.
// Per-token decode time is each server's own generation time / generated tokens
// (llama-server: timings.predicted_ms / predicted_n; runnel: the change of
// runnel_generation_seconds_total / runnel_generated_tokens_total in /metrics over the
// request); both cover the n-1 forward passes after the first token plus n samples, not
// the prompt. Printed beside it: the same figure measured by this client (first to last
// streamed token / (n-1)); the fastest run of each arm (on a busy machine the best of N
// is the closest to the unloaded speed, and llama.cpp's spinning worker threads lose most
// under load); each server process's CPU time per token (all threads, request handling
// included: less sensitive to load, but it counts threads spinning while they wait).
// llama-server runs with its defaults (-np 1, -c 4096 as runnel's slot); --llama-args adds
// more (--llama-args='--poll 0': its workers sleep instead of spinning between graphs).
// A fifth step per run, unless --no-cli: `runnel run --json-schema` with the same prompt,
// schema and count, for the part of runnel's decode time spent on grammar masks
// ("grammar: X ms of it, Y ms/token"), which the server does not report.
// llama.cpp samples first and applies the grammar to the whole vocabulary only when the
// sampled token is rejected: a trained model often passes, random weights (models/bench)
// seldom do, so there its figure is close to its worst case.
import {execFile, spawn} from "node:child_process";
import {existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from "node:fs";
import net from "node:net";
import {loadavg, tmpdir} from "node:os";
import path from "node:path";
import {promisify} from "node:util";
import {fileURLToPath} from "node:url";

import {median, parseCli, positiveInt} from "./lib/cli.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const run = promisify(execFile);
const usage = "usage: node scripts/grammar_bench.mjs [--model FILE] [--runs 5] [--tokens 96] [--threads 2] " +
              "[--schema FILE] [--no-cli] [--llama-args='--poll 0']";
const opts = parseCli("grammar_bench", usage, {
  model: {type: "string", default: path.join(root, "models/bench/llama-1b-q4_k_m.gguf")},
  runs: {type: "string", default: "5"},
  tokens: {type: "string", default: "96"},
  threads: {type: "string", default: "2"},
  schema: {type: "string"},
  "no-cli": {type: "boolean", default: false},
  "llama-args": {type: "string", default: ""},
});
const runs = positiveInt("grammar_bench", usage, "--runs", opts.runs);
const nTokens = positiveInt("grammar_bench", usage, "--tokens", opts.tokens);
const threads = positiveInt("grammar_bench", usage, "--threads", opts.threads);
if (nTokens < 2) throw new Error("--tokens: need at least 2 tokens for a per-token time");
const runnelBin = process.env.RUNNEL_BIN ?? path.join(root, "build-release/runnel");
const llamaServerBin = process.env.LLAMA_SERVER ?? path.join(root, "build-llama.cpp/build/bin/llama-server");
for (const [what, file, hint] of [["model", opts.model, "scripts/gen_bench_models.sh"],
                                  ["runnel binary", runnelBin, "cmake --build build-release --target runnel"],
                                  ["llama-server", llamaServerBin, "scripts/build_llama_cpp.sh llama-server"]]) {
  if (!existsSync(file)) {
    console.error(`grammar_bench: no ${what} at ${file} (${hint})`);
    process.exit(1);
  }
}

// An order: objects inside arrays inside objects, enums, integers with a range, numbers,
// strings with maxLength, optional fields. minItems keeps the document longer than
// --tokens' default, so most constrained runs stop at the count too.
const kOrderSchema = {
  type: "object",
  properties: {
    order_id: {type: "string", maxLength: 16},
    status: {enum: ["pending", "paid", "shipped", "delivered", "cancelled"]},
    customer: {
      type: "object",
      properties: {
        name: {type: "string", maxLength: 40},
        email: {type: "string", maxLength: 48},
        address: {
          type: "object",
          properties: {
            street: {type: "string", maxLength: 48},
            city: {type: "string", maxLength: 32},
            postal_code: {type: "string", maxLength: 10},
            country: {enum: ["US", "CA", "GB", "DE", "FR", "JP"]},
          },
          required: ["street", "city", "postal_code", "country"],
          additionalProperties: false,
        },
      },
      required: ["name", "email", "address"],
      additionalProperties: false,
    },
    items: {
      type: "array",
      minItems: 2,
      maxItems: 8,
      items: {
        type: "object",
        properties: {
          sku: {type: "string", maxLength: 12},
          description: {type: "string", maxLength: 64},
          quantity: {type: "integer", minimum: 1, maximum: 100},
          unit_price: {type: "number"},
          options: {
            type: "array",
            maxItems: 3,
            items: {
              type: "object",
              properties: {name: {enum: ["color", "size", "gift_wrap"]}, value: {type: "string", maxLength: 16}},
              required: ["name", "value"],
              additionalProperties: false,
            },
          },
        },
        required: ["sku", "description", "quantity", "unit_price"],
        additionalProperties: false,
      },
    },
    total: {type: "number"},
    notes: {type: "string", maxLength: 80},
  },
  required: ["order_id", "status", "customer", "items", "total"],
  additionalProperties: false,
};
const schema = opts.schema ? JSON.parse(readFileSync(opts.schema, "utf8")) : kOrderSchema;
const kPrompt = "Here is the customer's order from the shop's database, as one JSON object:\n";
// Texts of end-of-generation tokens across common vocabularies; those that are one token
// of this model are banned in runnel's unconstrained requests (llama-server: ignore_eos).
const kEndTexts = ["<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<|end_of_text|>", "<|eom_id|>", "<end_of_turn>",
                   "<|end|>", "</s>", "<eos>"];

const children = [];
process.on("exit", () => { for (const c of children) if (c.exitCode === null) c.kill("SIGKILL"); });
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(130));

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

// Starts `bin args` and resolves to {url, child} once GET url/health answers 200.
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
      if ((await fetch(`${url}/health`)).status === 200) return {name, url, child, log: () => log};
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function stopServer(server) {
  if (server.child.exitCode !== null) return;
  const exited = new Promise((r) => server.child.on("exit", r));
  server.child.kill("SIGTERM");
  await exited;
}

async function postJson(url, body) {
  const res = await fetch(url, {method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify(body)});
  const text = await res.text();
  if (!res.ok) throw new Error(`POST ${url}: ${res.status} ${text}`);
  return JSON.parse(text);
}

async function runnelMetrics(server) {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const value = (name) => Number(text.match(new RegExp(`^${name} (\\S+)$`, "m"))?.[1] ?? NaN);
  return {tokens: value("runnel_generated_tokens_total"), seconds: value("runnel_generation_seconds_total")};
}

// CPU time (user + system, all threads) the process has used so far, in ms: Linux
// /proc/PID/stat fields 14 and 15, in clock ticks (100 a second).
function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ").pop().split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

// The model's end tokens, as llama-server tokenizes their texts (one id each).
async function endTokenIds(llama) {
  const ids = new Set();
  for (const content of kEndTexts) {
    const {tokens} = await postJson(`${llama.url}/tokenize`, {content, add_special: false, parse_special: true,
                                                               with_pieces: true});
    if (tokens.length === 1 && tokens[0].piece === content) ids.add(tokens[0].id);
  }
  return [...ids];
}

// One streamed /v1/completions request; resolves to {n, msPerToken (the server's own),
// clientMsPerToken, cpuMsPerToken, text, finish}.
async function generate(server, constrained, endIds) {
  const body = {prompt: kPrompt, max_tokens: nTokens, temperature: 0, stream: true,
                stream_options: {include_usage: true}};
  if (constrained) {
    body.json_schema = schema;
  } else if (server.name === "llama-server") {
    body.ignore_eos = true;
  } else {
    body.logit_bias = Object.fromEntries(endIds.map((id) => [String(id), -100]));
  }
  const before = server.name === "runnel" ? await runnelMetrics(server) : null;
  const cpuBefore = cpuMs(server.child.pid);
  const res = await fetch(`${server.url}/v1/completions`, {method: "POST", headers: {"content-type": "application/json"},
                                                            body: JSON.stringify(body)});
  if (!res.ok) throw new Error(`${server.name}: POST /v1/completions: ${res.status} ${await res.text()}`);
  const decoder = new TextDecoder();
  let buffered = "", text = "", first = null, last = null, usage = null, timings = null, finish = null;
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
        const piece = j.choices?.[0]?.text ?? "";
        if (piece !== "") {
          first ??= now;
          last = now;
          text += piece;
        }
        finish = j.choices?.[0]?.finish_reason ?? finish;
        usage = j.usage ?? usage;
        timings = j.timings ?? timings;
      }
    }
  }
  if (!usage) throw new Error(`${server.name}: the stream carried no usage`);
  const n = usage.completion_tokens;
  let msPerToken;
  if (server.name === "runnel") {
    const after = await runnelMetrics(server);
    if (after.tokens - before.tokens !== n) {
      throw new Error(`runnel: /metrics counted ${after.tokens - before.tokens} generated tokens, usage ${n}`);
    }
    msPerToken = (after.seconds - before.seconds) * 1000 / n;
  } else {
    if (!timings) throw new Error("llama-server: the stream carried no timings");
    msPerToken = timings.predicted_ms / timings.predicted_n;
  }
  return {n, msPerToken, clientMsPerToken: n > 1 ? (last - first) / (n - 1) : NaN,
          cpuMsPerToken: (cpuMs(server.child.pid) - cpuBefore) / n, text, finish};
}

// `runnel run` constrained by the same schema: its generation rate and grammar ms/token.
async function runnelCli(schemaFile) {
  const args = ["run", "-m", opts.model, "-p", kPrompt, "--json-schema", `@${schemaFile}`, "-n", String(nTokens),
                "--temp", "0", "--no-display-prompt", "-t", String(threads)];
  const {stderr} = await run(runnelBin, args, {maxBuffer: 1 << 24});
  const gen = stderr.match(/^generation: (\d+) tokens in ([\d.]+) ms/m);
  const grammar = stderr.match(/^grammar: ([\d.]+) ms of it/m);
  if (!gen || !grammar) throw new Error(`runnel run printed no generation/grammar line:\n${stderr}`);
  const n = Number(gen[1]);
  return {n, msPerToken: Number(gen[2]) / n, grammarMsPerToken: Number(grammar[1]) / n};
}

const {stdout: runnelVersion} = await run(runnelBin, ["version"]);
const {stdout: llamaVersionOut, stderr: llamaVersionErr} =
    await run(llamaServerBin, ["--version"]).catch((e) => ({stdout: e.stdout ?? "", stderr: e.stderr ?? ""}));
const llamaVersion = (llamaVersionOut + llamaVersionErr).match(/version: .*/)?.[0] ?? "version unknown";

console.error(`grammar_bench: starting runnel serve and llama-server on ${path.basename(opts.model)}, ${threads} threads`);
const runnelPort = await freePort();
const runnel = await startServer("runnel", runnelBin, ["serve", "-m", opts.model, "--host", "127.0.0.1", "--port",
                                                      String(runnelPort), "-t", String(threads), "-c", "4096",
                                                      "--log-disable"], runnelPort);
const llamaPort = await freePort();
const llama = await startServer("llama-server", llamaServerBin, ["-m", opts.model, "--host", "127.0.0.1", "--port",
                                                                 String(llamaPort), "-t", String(threads), "-c", "4096",
                                                                 "-np", "1", "--no-webui",
                                                                 ...opts["llama-args"].split(" ").filter(Boolean)],
                                 llamaPort);
const endIds = await endTokenIds(llama);
// `runnel run` reads the schema from a file (@FILE).
const tmp = mkdtempSync(path.join(tmpdir(), "grammar-bench-"));
process.on("exit", () => rmSync(tmp, {recursive: true, force: true}));
const schemaFile = path.join(tmp, "schema.json");
writeFileSync(schemaFile, JSON.stringify(schema));

const loadBefore = loadavg()[0];
const arms = [
  {key: "runnel-free", server: runnel, constrained: false},
  {key: "runnel-schema", server: runnel, constrained: true},
  {key: "llama-free", server: llama, constrained: false},
  {key: "llama-schema", server: llama, constrained: true},
];
const results = Object.fromEntries(arms.map((a) => [a.key, []]));
results.cli = [];
const samples = {};
for (const a of arms) samples[a.key] = (await generate(a.server, a.constrained, endIds)).text;  // warm-ups
if (!opts["no-cli"]) await runnelCli(schemaFile);
for (let i = 0; i < runs; ++i) {
  // Odd runs go through the arms backwards, so drift in the machine's load within a run
  // does not favour the arms that come first.
  for (const a of i % 2 ? [...arms].reverse() : arms) {
    const r = await generate(a.server, a.constrained, endIds);
    results[a.key].push(r);
    console.error(`run ${i + 1}/${runs} ${a.key}: ${r.n} tokens (${r.finish}), ${r.msPerToken.toFixed(2)} ms/token ` +
                  `(client ${r.clientMsPerToken.toFixed(2)}, CPU ${r.cpuMsPerToken.toFixed(1)})`);
  }
  if (!opts["no-cli"]) {
    const c = await runnelCli(schemaFile);
    results.cli.push(c);
    console.error(`run ${i + 1}/${runs} runnel run --json-schema: ${c.n} tokens, ${c.msPerToken.toFixed(2)} ms/token, ` +
                  `grammar ${c.grammarMsPerToken.toFixed(3)} ms/token`);
  }
}
await stopServer(runnel);
await stopServer(llama);
const loadAfter = loadavg()[0];

const med = (key, field) => median(results[key].map((r) => r[field]));
const best = (key) => Math.min(...results[key].map((r) => r.msPerToken));
const row = (key) => ({n: med(key, "n"), ms: med(key, "msPerToken"), client: med(key, "clientMsPerToken"),
                       best: best(key), cpu: med(key, "cpuMsPerToken")});
const rows = Object.fromEntries(arms.map((a) => [a.key, row(a.key)]));
const overhead = (free, constrained) => 100 * (constrained / free - 1);
const pct = (x) => `${x >= 0 ? "+" : ""}${x.toFixed(1)}%`;

console.log(`model ${opts.model}; ${threads} thread(s); ${nTokens} tokens a request, temperature 0; ` +
            `median of ${runs} interleaved runs`);
console.log(`runnel ${runnelVersion.trim()}; llama-server ${llamaVersion} (${llamaServerBin}` +
            `${opts["llama-args"] ? ` ${opts["llama-args"]}` : ""})`);
console.log(`load average (1 min) ${loadBefore.toFixed(2)} before the runs, ${loadAfter.toFixed(2)} after`);
console.log(`schema ${opts.schema ?? "(built-in order schema)"}; runnel's banned end tokens: ${endIds.join(", ")}\n`);
console.log("| server | request | tokens | ms/token (server) | tok/s | ms/token (client) | best ms/token (server) | " +
            "CPU ms/token |");
console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const a of arms) {
  const r = rows[a.key];
  console.log(`| ${a.server.name} | ${a.constrained ? "json_schema" : "free"} | ${r.n} | ${r.ms.toFixed(2)} | ` +
              `${(1000 / r.ms).toFixed(2)} | ${r.client.toFixed(2)} | ${r.best.toFixed(2)} | ${r.cpu.toFixed(1)} |`);
}
const rO = overhead(rows["runnel-free"].ms, rows["runnel-schema"].ms);
const lO = overhead(rows["llama-free"].ms, rows["llama-schema"].ms);
const rOc = overhead(rows["runnel-free"].client, rows["runnel-schema"].client);
const lOc = overhead(rows["llama-free"].client, rows["llama-schema"].client);
// The same overhead per run (constrained / unconstrained of one round), then the median:
// less sensitive to load that drifts between rounds.
const perRun = (free, constrained) =>
  median(results[free].map((r, i) => overhead(r.msPerToken, results[constrained][i].msPerToken)));
const bestO = (free, constrained) => pct(overhead(rows[free].best, rows[constrained].best));
console.log(`\nconstrained / unconstrained per-token time, medians (server figures; client figures in brackets):`);
console.log(`  runnel       ${pct(rO)} [${pct(rOc)}]; median of per-run ratios ${pct(perRun("runnel-free", "runnel-schema"))}; ` +
            `best runs ${bestO("runnel-free", "runnel-schema")}`);
console.log(`  llama-server ${pct(lO)} [${pct(lOc)}]; median of per-run ratios ${pct(perRun("llama-free", "llama-schema"))}; ` +
            `best runs ${bestO("llama-free", "llama-schema")}`);
console.log(`  CPU time (all threads) per token: runnel ${pct(overhead(rows["runnel-free"].cpu, rows["runnel-schema"].cpu))}, ` +
            `llama-server ${pct(overhead(rows["llama-free"].cpu, rows["llama-schema"].cpu))}`);
const ratio = (field, free) => (rows[free ? "llama-free" : "llama-schema"][field] /
                               rows[free ? "runnel-free" : "runnel-schema"][field]).toFixed(2);
console.log(`runnel / llama-server tok/s: constrained ${ratio("ms", false)}x (best runs ${ratio("best", false)}x), ` +
            `unconstrained ${ratio("ms", true)}x (best runs ${ratio("best", true)}x)`);
if (results.cli.length > 0) {
  const g = median(results.cli.map((c) => c.grammarMsPerToken)), m = median(results.cli.map((c) => c.msPerToken));
  console.log(`runnel run --json-schema: ${median(results.cli.map((c) => c.n))} tokens, ${m.toFixed(2)} ms/token, ` +
              `of it grammar masks ${g.toFixed(3)} ms/token (${(100 * g / m).toFixed(1)}%)`);
}
console.log(`\nconstrained output (warm-up), runnel: ${JSON.stringify(samples["runnel-schema"].slice(0, 160))}`);
console.log(`constrained output (warm-up), llama-server: ${JSON.stringify(samples["llama-schema"].slice(0, 160))}`);
process.exit(0);
