// Where the tests find the default model, SmolLM2-135M-Instruct Q4_1: the repository's
// models/ copy, which scripts/setup.sh fetches (scripts/test.sh's RUNNEL_MODEL names the
// same file). Tests that need it warn and skip when it is absent.
#pragma once

namespace runnel::test {

inline constexpr const char* kSmolLm2Path =
    RUNNEL_TEST_DATA "/../../models/SmolLM2-135M-Instruct.Q4_1.gguf";

}  // namespace runnel::test
