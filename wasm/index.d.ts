// runnel-llm: GGUF language models in the browser and in Node 20.

/** Where the model comes from. `path` works in Node only. */
export type ModelSource =
  | { url: string | URL }
  | { blob: Blob; name?: string }
  | { bytes: Uint8Array | ArrayBuffer; name?: string }
  | { path: string };

export interface LoadProgress {
  /** 'download' (into the OPFS cache) or 'load' (weights into wasm memory). */
  phase: 'download' | 'load';
  loaded: number;
  total: number;
  /** download: true when the cached copy was used (no request for the weights). */
  cached?: boolean;
  resumed?: boolean;
}

export interface LoadOptions {
  /** Worker threads; more than 1 needs a cross-origin isolated page (COOP/COEP).
   * Falls back to 1, and model.info.threadsNote says why. Default 1. */
  threads?: number;
  /** Bytes the model may use; below the model's size, layers are streamed from the
   * file for every forward pass. Default: what wasm32 can address (3.5 GiB). */
  memoryBudget?: number;
  /** Context tokens per session (default min(training context, 4096)). */
  contextSize?: number;
  /** KV cache type: 'f16' (default), 'q8_0', 'q4_0'. */
  kvType?: 'f16' | 'q8_0' | 'q4_0';
  /** Tokens per forward pass while reading a prompt (default 64). */
  batchSize?: number;
  /** Keep the logits of every position of a batch, for `session.evalLogits` (costs
   * batchSize x nVocab floats per session). Default false. */
  allLogits?: boolean;
  /** The most draft tokens a session checks in one pass when a generation asks for
   * speculative decoding (GenerateParams.lookupNgram); each costs a row of nVocab floats
   * per session. 0 turns speculation off. Default min(8, batchSize - 1). */
  draftMax?: number;
  onProgress?: (p: LoadProgress) => void;
  /** Expected sha256 (hex) of a URL's file, checked while downloading. */
  sha256?: string;
  /** false: download a URL into memory instead of the OPFS cache. */
  cache?: boolean;
  /** Force a kernel set: 'ref' (scalar), 'simd128', or 'simd128-relaxed' (refused where
   *  the engine lacks relaxed SIMD). Default: the best the engine runs. */
  isa?: '' | 'ref' | 'simd128' | 'simd128-relaxed';
  /** Where runnel.mjs / runnel.wasm live (default: the package's dist/). */
  distUrl?: string | URL;
  /** Where worker.js lives (default: next to index.js). */
  workerUrl?: string | URL;
}

export interface ModelInfo {
  architecture: string;
  name: string;
  nVocab: number;
  nCtxTrain: number;
  contextSize: number;
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nHeadKv: number;
  /** Bytes of tensor data in the file (what a load reads). */
  fileBytes: number;
  threads: number;
  /** Why fewer threads run than were asked for ('' when all run). */
  threadsNote: string;
  /** The kernel set: 'simd128-relaxed' (relaxed-SIMD 4-bit and Q6_K products, where the
   *  engine has relaxed SIMD: Chromium, Node 22, Node 20 with
   *  --experimental-wasm-relaxed-simd), 'simd128' or 'ref'. */
  simd: string;
  floatOps: string;
  /** True when layers (or, for a mixture of experts, experts) are streamed from the
   *  file under memoryBudget. */
  streaming: boolean;
  weightsResidentBytes: number;
  /** Bytes of weights read from the file so far. */
  bytesRead: number;
  /** Mixture of experts under memoryBudget: experts the expert cache holds (0: none). */
  expertCacheSlots: number;
  /** The memory plan the load was checked against: all resident (totalBytes), the least
   *  with layers streamed, the expert stacks' share, and (mixture of experts; else 0)
   *  the least with experts streamed through the expert cache. A memoryBudget from
   *  expertStreamingBytes up to totalBytes streams experts. */
  memoryPlan: { totalBytes: number; streamingBytes: number; expertBytes: number; expertStreamingBytes: number };
  kvBytesPerSession: number;
  /** wasm memory size. */
  heapBytes: number;
  chatTemplate: boolean;
  chatTemplateError?: string;
  bos: number;
  eos: number;
}

/** Generation parameters: `runnel serve`'s request fields, camelCased (max_tokens ->
 * maxTokens, logit_bias -> logitBias, ...), plus typicalP and penaltyLastN. Unknown
 * keys are refused. */
export interface GenerateParams {
  /** Tokens to generate at most (default 256; -1: until the context is full). */
  maxTokens?: number;
  /** 0 is greedy (default 0.8). */
  temperature?: number;
  topK?: number;
  topP?: number;
  minP?: number;
  typicalP?: number;
  repeatPenalty?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
  penaltyLastN?: number;
  seed?: number;
  /** Generation ends before any of these strings; they are never emitted. */
  stop?: string | string[];
  /** Added to the named tokens' logits before sampling, as OpenAI's logit_bias:
   * { [tokenId]: bias } (or a Map / [id, bias] pairs), bias in [-100, 100]; -100 bans
   * the token. Ids outside the vocabulary are refused. */
  logitBias?: Record<number, number> | Map<number, number> | Array<[number, number]>;
  /** Constrains the output to a GBNF grammar (llama.cpp's syntax, start rule `root`),
   * as the server's `grammar` field; e.g. `'root ::= "yes" | "no"'`. A malformed grammar
   * rejects with its line and column. Not with jsonSchema. */
  grammar?: string;
  /** Constrains the output to JSON valid under this JSON schema (an object, or its JSON
   * text), as the server's `json_schema`; `{}` allows any JSON value. Not with grammar. */
  jsonSchema?: object | boolean | string;
  /** chat() only: variables for the chat template, as the server's
   * chat_template_kwargs; e.g. `{ enable_thinking: false }` asks Qwen3 not to think
   * (its template opens the reply with an empty think block). Keys runnel does not know
   * are refused. */
  chatTemplateKwargs?: ChatTemplateKwargs;
  /** chat() only: functions the model may call, as the server's `tools` (the OpenAI
   * shape `{ type: 'function', function: {...} }` is accepted too). Calls come back as
   * objects in `session.lastReply.toolCalls`; the streamed pieces are the model's raw
   * text (the call's JSON or markup). */
  tools?: Tool[];
  /** chat() only, with tools: 'auto' (default: the model decides), 'none' (the tools are
   * not shown; the reply is content), 'required' (at least one call), or a tool's name
   * (a call to it). required and a name force the call with a grammar, so it always
   * parses; so is every reply of a template with no native call format (SmolLM2's),
   * which then is `{"tool_calls": [...]}` or `{"response": "..."}` JSON. Not with
   * grammar / jsonSchema where a grammar is needed. */
  toolChoice?: 'auto' | 'none' | 'required' | string | { type: 'function'; function: { name: string } };
  /** chat() only: several calls in one reply where the model's format allows (default true). */
  parallelToolCalls?: boolean;
  /** Each generated token's log probability in session.lastLogprobs, as the server's
   * chat `logprobs`: the model's own distribution (raw logits, before logitBias,
   * temperature and grammars). */
  logprobs?: boolean;
  /** With logprobs: how many of each step's likeliest tokens to list (0-20, default 0). */
  topLogprobs?: number;
  /** Speculative decoding by prompt lookup, as the CLI's and the server's
   * --lookup-ngram: the tokens that followed an earlier occurrence of the last N tokens
   * (or fewer) are checked in one pass, up to the model's draftMax. Pays where the reply
   * repeats its input; greedy output is unchanged. 0 (default): off. */
  lookupNgram?: number;
  signal?: AbortSignal;
}

/** A generated token's log probability (the server's logprobs.content entry). */
export interface TokenLogprob {
  /** The token id. */
  id: number;
  /** The token's bytes as text (U+FFFD where it holds part of a character). */
  token: string;
  /** Natural log of its probability. */
  logprob: number;
  /** Its exact bytes. */
  bytes: number[];
  /** The step's likeliest tokens, most likely first (topLogprobs of them). */
  topLogprobs: Array<{ id: number; token: string; logprob: number; bytes: number[] }>;
}

/** A function the model may call. */
export interface Tool {
  /** 1 to 64 of a-z A-Z 0-9 _ -. */
  name: string;
  description?: string;
  /** JSON schema of the arguments object (default: any object). */
  parameters?: object;
}

/** A call the model made. */
export interface ToolCall {
  /** 'call_' + 24 alphanumerics (Mistral: the model's or 9 alphanumerics). */
  id: string;
  name: string;
  /** The arguments, parsed (an object valid under the tool's parameters when forced). */
  arguments: Record<string, unknown>;
}

/** A chat generation's reply split up (session.lastReply). */
export interface ChatReply {
  /** The text for the user (a generic JSON reply's "response"). */
  content: string;
  /** Text the model wrote between think markers (Qwen3, DeepSeek-R1 distills). */
  reasoning: string;
  toolCalls: ToolCall[];
}

/** Chat template variables runnel knows (the server's chat_template_kwargs). */
export interface ChatTemplateKwargs {
  /** Qwen3 and other reasoning templates: false asks the model not to reason. */
  enable_thinking?: boolean;
}

export interface EmbedOptions {
  /** Checked between texts: an aborted signal rejects with its reason. */
  signal?: AbortSignal;
}

export interface GenerationStats {
  promptTokens: number;
  /** Prompt tokens reused from the session's cache. */
  cachedTokens: number;
  generatedTokens: number;
  promptMs: number;
  generateMs: number;
  promptTokensPerSecond: number;
  generateTokensPerSecond: number;
  finishReason: 'length' | 'stop' | 'abort' | 'context';
  bytesRead: number;
  bytesReadPerToken: number;
  weightsResidentBytes: number;
  /** Mixture of experts with an expert cache: the share of picked experts found in it. */
  expertHitRate: number;
  /** Speculative decoding (lookupNgram): draft tokens checked, and of them accepted. */
  draftTokens: number;
  draftTokensAccepted: number;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool' | string;
  /** null for an assistant message that only calls tools. */
  content: string | null;
  /** assistant: the calls it made (lastReply.toolCalls as they came, or OpenAI's tool_calls). */
  toolCalls?: ToolCall[];
  /** tool: the id of the call this message answers. */
  toolCallId?: string;
  /** tool: the function's name (default: the name of the call it answers). */
  name?: string;
  /** assistant: earlier reasoning, for templates that re-render it (Qwen3). */
  reasoning?: string;
}

export declare class Session {
  readonly contextSize: number;
  /** The stats of the last finished generation. */
  readonly lastStats: GenerationStats | null;
  /** The last chat() reply split into content, reasoning and tool calls (null after
   * generate(), or while a generation runs). */
  readonly lastReply: ChatReply | null;
  /** With params.logprobs: the last generation's tokens, in order, with their log
   * probabilities (null otherwise); their bytes spell the generated text. */
  readonly lastLogprobs: TokenLogprob[] | null;
  /** Streams the continuation of a prompt (text or token ids). The prompt is the
   * whole context; the prefix already in this session's cache is reused. */
  generate(prompt: string | number[], params?: GenerateParams): AsyncGenerator<string, void, undefined>;
  /** Streams the reply to `messages` through the model's chat template. */
  chat(messages: ChatMessage[], params?: GenerateParams): AsyncGenerator<string, void, undefined>;
  /** The logits at every position of a prompt (text, BOS as the model wants and
   * special-token text parsed, or token ids): one Float32Array of info.nVocab floats per
   * prompt token, row i predicting the token after token i, as `runnel run --all-logits`
   * gives them. The prompt is the whole context (this session's cache is cleared first).
   * Needs a model loaded with `allLogits: true`. */
  evalLogits(prompt: string | number[]): Promise<Float32Array[]>;
  dispose(): Promise<void>;
}

export declare class Model {
  readonly info: ModelInfo;
  tokenize(text: string, options?: { addSpecial?: boolean; parseSpecial?: boolean }): Promise<number[]>;
  detokenize(ids: number[], options?: { special?: boolean }): Promise<string>;
  /** The prompt `chat(messages, { chatTemplateKwargs })` evaluates. */
  applyChatTemplate(messages: ChatMessage[], options?: { chatTemplateKwargs?: ChatTemplateKwargs }): Promise<string>;
  /** Sentence embeddings, as `runnel serve`'s POST /v1/embeddings: each text (BOS as
   * the model wants, special-token text not parsed, at most contextSize tokens, not
   * empty) becomes one L2-normalized vector of info.nEmbd floats: an embedding model
   * (bert, nomic-bert) pools as its GGUF's pooling_type says (mean, [CLS] or last token);
   * a generative model gives its final hidden states mean-pooled. One text gives one
   * vector, an array of texts one vector each, in order. An embedding model does not
   * generate: Session.generate and chat reject naming it. */
  embed(text: string, options?: EmbedOptions): Promise<Float32Array>;
  embed(texts: string[], options?: EmbedOptions): Promise<Float32Array[]>;
  /** Re-reads info (resident bytes, bytes read). */
  refreshInfo(): Promise<ModelInfo>;
  createSession(options?: { contextSize?: number }): Session;
  dispose(): Promise<void>;
}

export declare function loadModel(source: ModelSource, options?: LoadOptions): Promise<Model>;

export interface CachedModel {
  key: string;
  url: string;
  size: number;
  bytesOnDisk: number;
  complete: boolean;
  sha256?: string;
  savedAt: number;
}

/** Models in the OPFS cache (browser only). */
export declare function listCachedModels(): Promise<CachedModel[]>;
/** Removes a URL's cached model; true if something was removed. */
export declare function deleteCachedModel(url: string): Promise<boolean>;
/** navigator.storage.estimate() and whether storage is persistent. */
export declare function storageInfo(): Promise<{ usage: number; quota: number; persisted: boolean }>;
