// Session files (`--session FILE`): a conversation's tokens and KV cache on disk, so a
// later run continues without re-evaluating them (like llama.cpp's prompt cache).
// Format (little-endian), version 1:
//   "RNLSESS\0" | u32 version | u64 model fingerprint | u32 kv type | u32 n_layer |
//   u32 k_dim | u32 v_dim | u32 n_tokens | u32 n_cached | i32 tokens[n_tokens] |
//   kv bytes (KvCache::save_positions of the first n_cached) | u64 FNV-1a of all the above
// A file from another model, another KV type or shape, truncated or altered, is
// refused with a message saying which. Uses std file I/O (the only core file that does).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/gguf/gguf.h"
#include "core/runtime/engine.h"

namespace runnel {

// Identifies a model's weights and tokenizer (tensor table + key metadata).
uint64_t model_fingerprint(const GgufModel& model);

std::vector<uint8_t> serialize_session(const Session& session, uint64_t fingerprint);
// Throws std::runtime_error "session NAME: ..." naming the mismatch or damage.
void restore_session(Session& session, std::span<const uint8_t> bytes, uint64_t fingerprint,
                     const std::string& name);

// Writes to PATH.tmp, then renames: an interrupted save never leaves a half file.
void save_session_file(const std::string& path, const Session& session, uint64_t fingerprint);
// Returns false when PATH does not exist; throws like restore_session otherwise.
bool load_session_file(const std::string& path, Session& session, uint64_t fingerprint);

}  // namespace runnel
