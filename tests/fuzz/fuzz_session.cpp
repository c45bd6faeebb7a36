// Session files (core/runtime/session_file.h) on untrusted bytes, against the tiny
// model's session. Each input is restored twice: as given (the checksum catches most
// damage), and with its trailing FNV-1a rewritten to match, so that the fields after
// the checksum are fuzzed too. A restore that succeeds must leave a session that
// evaluates: one more token runs through the model.
// Expected failures: std::runtime_error "session fuzz.session: ..."; anything else
// escaping, or a sanitizer report, is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "core/runtime/session_file.h"
#include "tests/fuzz/tiny_engine.h"

namespace {

// The format's checksum (session_file.cpp): FNV-1a 64 over everything before it.
uint64_t fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

void restore_and_eval(runnel::Session& session, const std::vector<uint8_t>& bytes, uint64_t fingerprint) {
  try {
    runnel::restore_session(session, bytes, fingerprint, "fuzz.session");
  } catch (const std::runtime_error& e) {
    if (std::strncmp(e.what(), "session fuzz.session: ", 22) != 0) {
      std::fprintf(stderr, "restore_session: an error that does not name the file: %s\n", e.what());
      std::abort();
    }
    return;
  }
  const runnel::TokenId next[] = {3};
  if (session.position() + 1 <= session.n_ctx()) (void)session.eval(next);
}

// The tiny model with a 32-token context, one session reused by every input.
struct State {
  std::unique_ptr<runnel::Engine> engine = runnel::fuzz::tiny_engine(/*n_ctx=*/32);
  uint64_t fingerprint = runnel::model_fingerprint(engine->store().model());
  std::unique_ptr<runnel::Session> session = engine->new_session();
};

State& state() {
  static State kState;
  return kState;
}

}  // namespace

// Loads what the inputs need before the first one, so that -timeout=1 times inputs only.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)state();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  State& s = state();
  std::vector<uint8_t> bytes(data, data + size);
  restore_and_eval(*s.session, bytes, s.fingerprint);
  if (bytes.size() >= sizeof(uint64_t)) {
    const uint64_t sum = fnv1a(bytes.data(), bytes.size() - sizeof(uint64_t));
    std::memcpy(bytes.data() + bytes.size() - sizeof(uint64_t), &sum, sizeof sum);
    restore_and_eval(*s.session, bytes, s.fingerprint);
  }
  s.session->reset();
  return 0;
}
