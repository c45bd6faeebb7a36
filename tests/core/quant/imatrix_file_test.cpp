// Importance-matrix files in llama-imatrix's GGUF layout: written and read back, the
// per-column weights quantization takes (sums / counts, 1 for an expert that saw no
// rows), and the files refused.
#include <catch2/catch.hpp>

#include "core/gguf/gguf_writer.h"
#include "core/quant/imatrix_file.h"

namespace runnel {

TEST_CASE("imatrix file: written as llama-imatrix lays it out, read back equal", "[quant]") {
  ImatrixData d;
  d.datasets = {"us-constitution.txt"};
  d.chunk_count = 3;
  d.chunk_size = 512;
  d.entries["blk.0.attn_q.weight"] = {{2.0f, 4.0f, 6.0f, 8.0f}, {2}};
  // Two experts of 2 columns; the second saw no rows.
  d.entries["blk.0.ffn_up_exps.weight"] = {{3.0f, 9.0f, 0.0f, 0.0f}, {3, 0}};
  const std::vector<uint8_t> bytes = imatrix_bytes(d);

  const GgufFile f = GgufFile::parse(bytes, "m.imatrix");
  CHECK(f.metadata().get_string("general.type") == "imatrix");
  CHECK(f.metadata().get_u64("imatrix.chunk_count") == 3);
  CHECK(f.metadata().get_u64("imatrix.chunk_size") == 512);
  REQUIRE(f.tensors().size() == 4);
  // Sorted by weight name, sums before counts; sums [ne0, n_mat], counts [1, n_mat].
  CHECK(f.tensors()[0].name == "blk.0.attn_q.weight.in_sum2");
  CHECK(f.tensors()[0].dims == std::vector<int64_t>{4, 1});
  CHECK(f.tensors()[1].name == "blk.0.attn_q.weight.counts");
  CHECK(f.tensors()[3].name == "blk.0.ffn_up_exps.weight.counts");
  CHECK(f.tensors()[3].dims == std::vector<int64_t>{1, 2});

  const ImatrixData back = parse_imatrix(bytes, "m.imatrix");
  CHECK(back.datasets == d.datasets);
  CHECK(back.chunk_count == 3);
  REQUIRE(back.entries.size() == 2);
  CHECK(back.entries.at("blk.0.ffn_up_exps.weight").sums == d.entries["blk.0.ffn_up_exps.weight"].sums);
  CHECK(back.entries.at("blk.0.ffn_up_exps.weight").counts == std::vector<int64_t>{3, 0});

  const ImportanceMatrix im = importance_from(back);
  CHECK(im.at("blk.0.attn_q.weight") == std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f});
  CHECK(im.at("blk.0.ffn_up_exps.weight") == std::vector<float>{1.0f, 3.0f, 1.0f, 1.0f});
}

TEST_CASE("imatrix file: what is not an importance matrix is refused by name", "[quant]") {
  GgufWriter model;
  model.set_string("general.architecture", "llama");
  CHECK_THROWS_WITH(parse_imatrix(model.bytes(), "model.gguf"),
                    "model.gguf: not an importance matrix (general.type is '', expected 'imatrix')");

  GgufWriter lone;
  lone.set_string("general.type", "imatrix");
  const std::vector<float> sums{1.0f, 2.0f};
  lone.add_tensor("w.in_sum2", GgmlType::F32, {2, 1}, {reinterpret_cast<const uint8_t*>(sums.data()), 8});
  CHECK_THROWS_WITH(parse_imatrix(lone.bytes(), "x.imatrix"), "x.imatrix: w has sums but no counts");

  GgufWriter odd;
  odd.set_string("general.type", "imatrix");
  const std::vector<float> three{1.0f, 2.0f, 3.0f}, two{1.0f, 1.0f};
  odd.add_tensor("w.in_sum2", GgmlType::F32, {3, 1}, {reinterpret_cast<const uint8_t*>(three.data()), 12});
  odd.add_tensor("w.counts", GgmlType::F32, {1, 2}, {reinterpret_cast<const uint8_t*>(two.data()), 8});
  CHECK_THROWS_WITH(parse_imatrix(odd.bytes(), "y.imatrix"), "y.imatrix: w: 3 sums do not divide into 2 matrices");
}

}  // namespace runnel
