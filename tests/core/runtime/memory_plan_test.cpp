// The memory plan against sizes computed by hand for the 1B/8B shapes and SmolLM2.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <vector>

#include "core/model/model.h"
#include "core/runtime/memory_plan.h"
#include "kernels/ops.h"
#include "tests/core/model/tiny_model.h"

namespace runnel {
namespace {

ModelConfig llama_shape(int n_embd, int n_layer, int n_ff) {
  ModelConfig c;
  c.n_embd = n_embd;
  c.n_layer = n_layer;
  c.n_ff = n_ff;
  c.n_head = 32;
  c.n_head_kv = 8;
  c.head_dim = c.head_dim_v = n_embd / 32;
  c.n_rot = c.head_dim;
  c.n_vocab = 128256;
  c.n_ctx_train = 131072;
  return c;
}

}  // namespace

TEST_CASE("memory plan: KV cache of the 1B and 8B shapes", "[plan]") {
  MemoryPlanOptions o;
  o.n_ctx = 4096;
  const ModelConfig b1 = llama_shape(2048, 16, 8192);  // kv_dim = 8 heads x 64 = 512
  const ModelConfig b8 = llama_shape(4096, 32, 14336);  // kv_dim = 8 x 128 = 1024
  // 16 layers x 4096 positions x (512 + 512) halves x 2 bytes
  CHECK(plan_kv_bytes(b1, o) == 16ull * 4096 * 1024 * 2);
  // 32 x 4096 x 2048 x 2 = 512 MiB
  CHECK(plan_kv_bytes(b8, o) == 512ull << 20);
  o.kv_type = GgmlType::Q8_0;
  o.n_ctx = 8192;
  // q8_0: 34 bytes per 32 values; 1024 values = 1088 bytes per row
  CHECK(plan_kv_bytes(b8, o) == 32ull * 8192 * 2 * 1088);
  o.n_sessions = 2;
  CHECK(plan_kv_bytes(b8, o) == 2ull * 32 * 8192 * 2 * 1088);
}

TEST_CASE("memory plan: sliding layers count only their window's slots (Gemma 3 270M)", "[plan]") {
  ModelConfig c;  // Gemma 3 270M: 18 layers, 1 kv head of 256, window 512 on 5 of 6 layers
  c.n_embd = 640;
  c.n_layer = 18;
  c.n_ff = 2048;
  c.n_head = 4;
  c.n_head_kv = 1;
  c.head_dim = c.head_dim_v = c.n_rot = 256;
  c.n_vocab = 262144;
  c.n_ctx_train = 32768;
  c.n_swa = 512;
  c.swa_layers.assign(18, true);
  for (int l = 5; l < 18; l += 6) c.swa_layers[l] = false;
  MemoryPlanOptions o;
  o.n_ctx = 4096;
  o.n_batch = 64;
  // 3 global layers x 4096 + 15 sliding x (2 x 512 + 63) slots, K and V of 256 halves
  CHECK(plan_kv_bytes(c, o) == (3ull * 4096 + 15ull * 1087) * 2 * 256 * 2);
  CHECK(plan_kv_bytes(c, o) == 29279232);  // 27.9 MiB, what `run` reports for this model
  o.n_ctx = 1024;  // a context below the window's slots: every layer keeps it whole
  CHECK(plan_kv_bytes(c, o) == 18ull * 1024 * 2 * 256 * 2);
}

TEST_CASE("memory plan: scratch of the 1B shape by hand", "[plan]") {
  MemoryPlanOptions o;
  o.n_ctx = 4096;
  o.n_batch = 64;
  o.n_tasks = 8;
  const ModelConfig c = llama_shape(2048, 16, 8192);
  // floats: 64 x (3*2048 + 2048 + 512 + 512 + 2048 + 2*8192 + 64) per token, + (2048 +
  // 2048 + 512 + 512 + 2*64) per layer (norm, biases, q/k norms), + 128256 logits
  const uint64_t floats = 64ull * (6144 + 2048 + 512 + 512 + 2048 + 16384 + 64) + 5248 + 128256;
  // rows + packed groups + gemm_x8's per-block sums of each row (an int per 32 bytes)
  const uint64_t sums = 3ull * 64 * (8192 * 4 / 32 + 1) * 4;
  // and, where the kernels prepare Q6_K's and Q4_K's activations (AVX-512: 80 and 4 ints a
  // 256-block), a prepared copy of each row for each (its bytes times 80 / 256, 4 / 256 ints)
  const uint64_t prepared_ints = (kernels().of(GgmlType::Q6_K).x8_prepare ? 8192 * 4 * 80 / 256 + 1 : 0) +
                                 (kernels().of(GgmlType::Q4_K).x8_prepare ? 8192 * 4 * 4 / 256 + 1 : 0);
  const uint64_t prepared = 64ull * prepared_ints * 4;
  const uint64_t matmul = 3ull * 64 * 8192 * 4 + 3ull * 64 * 8192 * 5 / 4 + sums + prepared;
  // per task: 4 heads' scores, an f16 row, a V row, 4 widened rows (wasm)
  const uint64_t attention = 8ull * (4 * 4 * 4096 + 2 * 4096 + 4 * 64 + 4 * 4 * 4096);
  CHECK(plan_scratch_bytes(c, o) == 4 * floats + matmul + attention);
  // float matrices: packed f32 groups, 4 bytes an element of the 8-token groups
  const uint64_t float_matmul = 3ull * 64 * 8192 * 4 + 3ull * 64 * 8192 * 4 + sums + prepared;
  CHECK(plan_scratch_bytes(c, o, true) == 4 * floats + float_matmul + attention);
  // Four slots decoded together (DecodeBatch): each session's scratch, plus one for 4
  // rows and a prompt chunk of 64 beside them (9 packed groups), with 4 + 1 rows of
  // logits.
  o.n_sessions = 4;
  o.n_decode_batch = 4;
  const uint64_t floats4 = 68ull * (6144 + 2048 + 512 + 512 + 2048 + 16384 + 64) + 5248 + 5ull * 128256;
  const uint64_t matmul4 = 3ull * 68 * 8192 * 4 + 3ull * 8192 * 5 / 4 * 8 * 9 +
                           3ull * 68 * (8192 * 4 / 32 + 1) * 4 +
                           68ull * prepared_ints * 4;
  CHECK(plan_scratch_bytes(c, o) == 4 * (4 * floats + matmul + attention) + 4 * floats4 + matmul4 + attention);
  o.n_decode_batch = 1;  // one slot: no batch
  CHECK(plan_scratch_bytes(c, o) == 4 * (4 * floats + matmul + attention));
}

TEST_CASE("memory plan: the scratch types report what they allocate", "[plan]") {
  // The plan takes each type's own size function: they must match the allocations.
  for (const int group : {1, 4}) {
    const AttentionScratch att(3, 100, 64, group);
    CHECK(att.allocated_bytes() == AttentionScratch::bytes(3, 100, 64, group, 2 * 100,
                                                          float_ops().dot_f16_f32 != nullptr));
  }
  for (const int n_tokens : {1, 2, 3, 64}) {  // packed groups from 3 tokens on
    const MatmulScratch mm(n_tokens, 1000, 320);
    CHECK(mm.allocated_bytes() == MatmulScratch::bytes(n_tokens, 1000, 320));
  }
  const test::TinyModel m = test::build_tiny_model({});
  const std::unique_ptr<WeightStore> store = m.store();
  const ModelConfig config = ModelConfig::from_model(store->model());
  const Model model(config, *store);
  for (const bool all_logits : {false, true}) {
    const ForwardScratch s(model, 8, 64, 4, all_logits);
    CHECK(s.float_bytes_allocated() == ForwardScratch::float_bytes(config, 8, all_logits));
  }
}

TEST_CASE("memory plan: fit, streaming and the description", "[plan]") {
  MemoryPlan p;
  p.weights_bytes = 4000;
  p.non_layer_bytes = 1000;
  p.max_layer_bytes = 300;
  p.kv_bytes = 500;
  p.scratch_bytes = 100;
  p.overhead_bytes = 400;
  CHECK(p.total_bytes() == 5000);
  CHECK(p.streaming_bytes() == 1000 + 600 + 1000);
  CHECK(p.fit(5000) == MemoryPlan::Fit::Resident);
  CHECK(p.fit(4999) == MemoryPlan::Fit::Streaming);
  CHECK(p.fit(2600) == MemoryPlan::Fit::Streaming);
  CHECK(p.fit(2599) == MemoryPlan::Fit::DoesNotFit);
  CHECK(p.weight_budget(3000) == 2000);
  CHECK_THAT(p.describe(2000, "(test)"), Catch::Contains("does not fit") && Catch::Contains("--kv-type"));
  CHECK_THAT(p.describe(3000, "(test)"), Catch::Contains("streaming"));
}

TEST_CASE("memory plan: byte sizes", "[plan]") {
  CHECK(parse_byte_size("2500M") == 2500ull << 20);
  CHECK(parse_byte_size("2.5G") == 5ull << 29);
  CHECK(parse_byte_size("512MiB") == 512ull << 20);
  CHECK(parse_byte_size("6GB") == 6ull << 30);
  CHECK(parse_byte_size("1073741824") == 1ull << 30);
  CHECK(parse_byte_size("64k") == 64ull << 10);
  for (const char* bad : {"", "G", "-1G", "1.2.3G", "5X", "0", "1e30G"}) {
    INFO(bad);
    REQUIRE_THROWS_AS(parse_byte_size(bad), std::invalid_argument);
  }
  CHECK(format_bytes(3ull << 20) == "3.0 MiB");
  CHECK(format_bytes(1536ull << 20) == "1.50 GiB");
}

TEST_CASE("memory plan: SmolLM2 from its GGUF", "[plan][real]") {
  const char* path = std::getenv("RUNNEL_MODEL");
  if (!path) {
    WARN("RUNNEL_MODEL is not set: skipping");
    return;
  }
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<GgufFile> files;
  files.push_back(GgufFile::parse(bytes, "smol"));
  const GgufModel model = GgufModel::join(std::move(files));
  const ModelConfig c = ModelConfig::from_model(model);
  MemoryPlanOptions o;
  o.n_ctx = 4096;
  const MemoryPlan p = plan_memory(model, c, o);
  // 30 layers x 4096 x (3 kv heads x 64 = 192) x 2 (K and V) x 2 bytes = 90 MiB
  CHECK(p.kv_bytes == 30ull * 4096 * 192 * 2 * 2);
  // The tensors are the file minus its header and alignment padding.
  const uint64_t data = bytes.size() - model.files[0].data_offset();
  CHECK(p.weights_bytes <= data);
  CHECK(p.weights_bytes > data - data / 100);
  // token_embd (tied output) is the only large tensor outside layers:
  // 49152 x 576 in Q8_0 = 49152 x 18 blocks x 34 bytes
  CHECK(p.non_layer_bytes >= 49152ull * 18 * 34);
  CHECK(p.non_layer_bytes < 49152ull * 18 * 34 + (1 << 20));
}

}  // namespace runnel
