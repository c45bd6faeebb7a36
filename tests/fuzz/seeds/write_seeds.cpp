// Writes the binary seeds of the corpus (tests/fuzz/corpus/gguf, .../session), made by
// the project's own writers so that they stay valid when the formats move on:
//   build-fuzz/tests/fuzz/fuzz_write_seeds tests/fuzz/corpus
// gguf: a small model header with a tokenizer and three tensors (v3 and v2), and a
// 2-part split set joined by fuzz_gguf.cpp's separator. session: the tiny model's
// session after 0, 5 and 12 tokens (what restore_session reads).
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/gguf/gguf_writer.h"
#include "core/runtime/session_file.h"
#include "tests/fuzz/tiny_engine.h"

namespace runnel {
namespace {

void write(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
  std::printf("%s: %zu bytes\n", path.c_str(), bytes.size());
}

// A model header of a few hundred bytes: architecture, a 6-token SPM vocabulary,
// optional split keys, and `tensors` tiny F32/F16/Q8_0 tensors.
GgufWriter small_model(const std::vector<std::string>& tensors, int split_no = -1, int split_count = 0) {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.context_length", 64);
  w.set_u32("llama.embedding_length", 32);
  w.set_u32("llama.block_count", 1);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "\xe2\x96\x81hi", "a", "<0x41>"});
  w.set("tokenizer.ggml.scores", GgufValue{GgufType::ARRAY, GgufType::F32, std::vector<double>{0, 0, 0, -1, -2, -3}});
  w.set("tokenizer.ggml.token_type",
        GgufValue{GgufType::ARRAY, GgufType::I32, std::vector<int64_t>{2, 3, 3, 1, 1, 6}});
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  w.set_string("tokenizer.chat_template", "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}");
  if (split_no >= 0) {
    w.set("split.no", GgufValue{GgufType::U16, GgufType::U8, uint64_t(split_no)});
    w.set("split.count", GgufValue{GgufType::U16, GgufType::U8, uint64_t(split_count)});
    w.set("split.tensors.count", GgufValue{GgufType::I32, GgufType::U8, int64_t(3)});
  }
  for (const std::string& name : tensors) {
    if (name == "token_embd.weight") {
      w.add_tensor(name, GgmlType::F32, {4, 2}, std::vector<uint8_t>(32, 0));
    } else if (name == "output_norm.weight") {
      w.add_tensor(name, GgmlType::F16, {4}, std::vector<uint8_t>(8, 0x3c));
    } else {
      w.add_tensor(name, GgmlType::Q8_0, {32, 1}, std::vector<uint8_t>(34, 1));
    }
  }
  return w;
}

std::vector<uint8_t> joined(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
  const std::string_view sep = "\n==runnel-gguf-split==\n";  // fuzz_gguf.cpp's kSplitSeparator
  a.insert(a.end(), sep.begin(), sep.end());
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace
}  // namespace runnel

int main(int argc, char** argv) {
  using namespace runnel;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const std::vector<std::string> all = {"token_embd.weight", "output_norm.weight", "blk.0.attn_q.weight"};
  write(dir + "/gguf/seed-model-v3.gguf", small_model(all).bytes(3));
  write(dir + "/gguf/seed-model-v2.gguf", small_model(all).bytes(2));
  write(dir + "/gguf/seed-split-2-parts",
        joined(small_model({all[0], all[1]}, 0, 2).bytes(), small_model({all[2]}, 1, 2).bytes()));

  const std::unique_ptr<Engine> engine = fuzz::tiny_engine(/*n_ctx=*/32);
  const uint64_t fingerprint = model_fingerprint(engine->store().model());
  for (const int n : {0, 5, 12}) {
    const std::unique_ptr<Session> session = engine->new_session();
    if (n > 0) {
      std::vector<TokenId> tokens;
      for (int i = 0; i < n; ++i) tokens.push_back(3 + i % 30);
      (void)session->eval(tokens);
    }
    write(dir + "/session/seed-" + std::to_string(n) + "-tokens.session", serialize_session(*session, fingerprint));
  }
  return 0;
}
