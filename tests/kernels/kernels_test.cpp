// The kernel table: which types are supported, block structs vs kernels/types.h, and
// select_kernels().
#include "kernels/kernels.h"

#include <catch2/catch.hpp>

#include "kernels/ops.h"
#include "kernels/ref/blocks.h"
#include "kernels/ref/ops.h"

namespace runnel {
namespace {

TEST_CASE("Block structs have the sizes kernels/types.h declares", "[kernels]") {
  using namespace runnel::ref;
  CHECK(sizeof(BlockQ4_0) == traits(GgmlType::Q4_0).type_size);
  CHECK(sizeof(BlockQ4_1) == traits(GgmlType::Q4_1).type_size);
  CHECK(sizeof(BlockQ5_0) == traits(GgmlType::Q5_0).type_size);
  CHECK(sizeof(BlockQ5_1) == traits(GgmlType::Q5_1).type_size);
  CHECK(sizeof(BlockQ8_0) == traits(GgmlType::Q8_0).type_size);
  CHECK(sizeof(BlockQ8_1) == traits(GgmlType::Q8_1).type_size);
  CHECK(sizeof(BlockQ2_K) == traits(GgmlType::Q2_K).type_size);
  CHECK(sizeof(BlockQ3_K) == traits(GgmlType::Q3_K).type_size);
  CHECK(sizeof(BlockQ4_K) == traits(GgmlType::Q4_K).type_size);
  CHECK(sizeof(BlockQ5_K) == traits(GgmlType::Q5_K).type_size);
  CHECK(sizeof(BlockQ6_K) == traits(GgmlType::Q6_K).type_size);
  CHECK(sizeof(BlockQ8_K) == traits(GgmlType::Q8_K).type_size);
  CHECK(sizeof(BlockMxfp4) == traits(GgmlType::MXFP4).type_size);
  CHECK(sizeof(BlockIq4Nl) == traits(GgmlType::IQ4_NL).type_size);
  CHECK(sizeof(BlockIq4Xs) == traits(GgmlType::IQ4_XS).type_size);
}

TEST_CASE("The lookup types have ggml's ids, names and geometry", "[kernels]") {
  // ids are what GGUF files store (ggml.h: GGML_TYPE_IQ4_NL = 20, IQ4_XS = 23, MXFP4 = 39)
  CHECK(static_cast<uint32_t>(GgmlType::IQ4_NL) == 20);
  CHECK(static_cast<uint32_t>(GgmlType::IQ4_XS) == 23);
  CHECK(static_cast<uint32_t>(GgmlType::MXFP4) == 39);
  CHECK(traits(GgmlType::IQ4_NL).name == "IQ4_NL");
  CHECK(traits(GgmlType::IQ4_XS).name == "IQ4_XS");
  CHECK(traits(GgmlType::MXFP4).name == "MXFP4");
  CHECK(traits(GgmlType::IQ4_NL).block_size == 32);
  CHECK(traits(GgmlType::IQ4_XS).block_size == 256);
  CHECK(traits(GgmlType::MXFP4).block_size == 32);
  // 4.5, 4.25 and 4.25 bits per weight
  CHECK(row_bytes(GgmlType::IQ4_NL, 4096) == 4096 * 9 / 16);
  CHECK(row_bytes(GgmlType::IQ4_XS, 4096) == 4096 * 17 / 32);
  CHECK(row_bytes(GgmlType::MXFP4, 4096) == 4096 * 17 / 32);
  CHECK(ref_kernels().of(GgmlType::MXFP4).vec_dot_type == GgmlType::Q8_0);
  CHECK(ref_kernels().of(GgmlType::IQ4_NL).vec_dot_type == GgmlType::Q8_0);
  CHECK(ref_kernels().of(GgmlType::IQ4_XS).vec_dot_type == GgmlType::Q8_K);
}

TEST_CASE("The reference table covers every type runnel knows", "[kernels]") {
  int supported = 0;
  for (uint32_t id = 0; id < kGgmlTypeIdLimit; ++id) {
    const TypeKernels& k = ref_kernels().types[id];
    const bool known = type_traits(id).has_value();
    INFO("type id " << id);
    CHECK(k.supported == known);
    if (!known) continue;
    ++supported;
    CHECK(k.dequantize_row != nullptr);
    CHECK(k.quantize_row != nullptr);
    // Activation-only formats have no dot of their own; everything else does, and its
    // partner type is itself supported.
    const auto t = static_cast<GgmlType>(id);
    const bool activation_only = t == GgmlType::Q8_1 || t == GgmlType::Q8_K;
    CHECK((k.vec_dot == nullptr) == activation_only);
    CHECK(ref_kernels().of(k.vec_dot_type).supported);
  }
  CHECK(supported == 18);
  CHECK(ref_kernels().isa == "ref");
}

TEST_CASE("select_kernels: ref, automatic and unknown names", "[kernels]") {
  CHECK_FALSE(select_kernels("avx9000"));
  CHECK_FALSE(select_kernels("REF"));
  CHECK(select_kernels("ref"));
  CHECK(&kernels() == &ref_kernels());
  CHECK(&float_ops() == &ref_float_ops());
  CHECK(kernels().isa == "ref");
  CHECK(float_ops().isa == "ref");
  CHECK((float_ops().rms_norm == &ref::rms_norm));
  CHECK((float_ops().rope_apply == &ref::rope_apply));
  // Automatic selection picks the best ISA of this machine; partner types do not
  // depend on the ISA.
  CHECK(select_kernels(""));
  CHECK(kernels().of(GgmlType::Q4_K).vec_dot_type == GgmlType::Q8_K);
  CHECK(select_kernels("ref"));
}

TEST_CASE("Every float op is filled in", "[kernels]") {
  const FloatOps& o = ref_float_ops();
  CHECK(o.rms_norm != nullptr);
  CHECK(o.softmax != nullptr);
  CHECK(o.silu != nullptr);
  CHECK(o.swiglu != nullptr);
  CHECK(o.gelu != nullptr);
  CHECK(o.geglu != nullptr);
  CHECK(o.softcap != nullptr);
  CHECK(o.add != nullptr);
  CHECK(o.mul != nullptr);
  CHECK(o.scale != nullptr);
  CHECK(o.axpy != nullptr);
  CHECK(o.rope_cos_sin != nullptr);
  CHECK(o.rope_apply != nullptr);
}

}  // namespace
}  // namespace runnel
