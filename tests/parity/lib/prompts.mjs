// Inputs shared by the parity tests. Each list aims at a different part of the
// pipeline: TOKENIZE_PROMPTS at the pre-tokenizer and BPE merges (scripts, digits,
// whitespace, bytes), GREEDY_PROMPTS and LOGIT_PROMPTS at the forward pass.

export const TOKENIZE_PROMPTS = [
  "Hello world",
  "The quick brown fox jumps over the lazy dog.",
  " leading space and trailing space ",
  "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
  "for (int i = 0; i < 10; ++i) { sum += a[i] * b[i]; }",
  "3.14159 2718281828 1,000,000 0x1F 1e-9 12345678901234567890",
  "Price: $42.99 (was €50,00) — 15% off!!!",
  "emoji: 😀👍🏽🇫🇷 ❤️ 🧑‍💻",
  "中文分词测试：你好，世界！",
  "日本語のテキストとカタカナ、ひらがな。",
  "한국어 문장입니다.",
  "Crème brûlée, naïve façade, Ångström, São Paulo, Zürich",
  "Привет, мир! Ελληνικά γράμματα.",
  "tabs\tand\t\tspaces    and     runs",
  "line one\nline two\n\n\nline five\r\nwindows line",
  "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
  "I'm sure it's fine; they've said you'll see—won't you?",
  "https://example.com/path?q=a+b&x=1#frag user@example.org",
  "   ",
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
];

// [name, prompt, special]: `special` lets the chat markup become control tokens.
// Greedy text is only comparable where llama.cpp's own choice is clear. On this 135M
// model most prose continuations reach a step whose top-2 logits lie within 0.05 of
// each other, where llama.cpp with and without flash attention already part ways.
// greedy.test.mjs compares up to llama.cpp's first step with a top-2 margin under 0.5
// on the host it runs on; these prompts keep it above that for 46-64 tokens or to the
// end-of-turn token on AVX2 and AVX-512 hosts, but for countdown (7 tokens on AVX2).
export const GREEDY_PROMPTS = [
  ["counting", "1, 2, 3, 4, 5,", false],
  ["tens", "10, 20, 30, 40,", false],
  ["countdown", "100, 99, 98, 97,", false],
  ["hundreds", "100, 200, 300, 400,", false],
  ["evens", "2, 4, 6, 8, 10,", false],
  ["alphabet", "a, b, c, d, e,", false],
  ["chat repeat", "<|im_start|>user\nRepeat after me: the cat sat on the mat.<|im_end|>\n<|im_start|>assistant\n", true],
  ["chat capital", "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n", true],
];

export const LOGIT_PROMPTS = [
  ["one token", "Hi", false],
  ["short", "The capital of France is", false],
  ["long", "In 1969, the Apollo 11 mission landed the first humans on the Moon. The commander, Neil " +
       "Armstrong, stepped onto the lunar surface and said", false],
  ["chat", "<|im_start|>user\nTranslate 'good morning' into Spanish.<|im_end|>\n<|im_start|>assistant\n", true],
  ["code", "def fib(n):\n    return", false],
];

// The tiny random-weight models' prompts (arch.test.mjs): 30-60 tokens each with the
// test vocabularies, so every one crosses the tiny models' sliding windows (12-16
// tokens).
export const ARCH_PROMPTS = [
  ["prose", "The old lighthouse keeper climbed the narrow stairs every evening, lit the great lamp, " +
            "and watched the ships pass safely through the rocks below."],
  ["code", "def merge(a, b):\n    out = []\n    while a and b:\n        out.append(a.pop(0) if a[0] < b[0] " +
           "else b.pop(0))\n    return out + a + b\n"],
  ["mixed", "Order #4521: 3 x widgets @ $12.50, 2 x gadgets @ $7.25; total $52.00 (paid 2024-03-15, " +
            "ref ABC-991)."],
];
