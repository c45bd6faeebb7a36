// The engine the request and session targets run against: the tiny llama model of the
// unit tests (tests/core/model/tiny_model.h: random weights, a 40-token SPM vocabulary,
// ChatML as its built-in template), in memory.
#pragma once

#include <memory>

#include "core/runtime/engine.h"
#include "tests/core/model/tiny_model.h"

namespace runnel::fuzz {

inline const test::TinyModel& tiny_model() {
  static const test::TinyModel kModel = test::build_tiny_model(test::TinySpec{});
  return kModel;
}

inline std::unique_ptr<Engine> tiny_engine(int n_ctx = 256) {
  EngineOptions o;
  o.n_ctx = n_ctx;
  o.n_batch = 8;
  return Engine::load(tiny_model().store(), o);
}

// The engine of the request and grammar targets, built once per process.
inline Engine& shared_tiny_engine() {
  static const std::unique_ptr<Engine> kEngine = tiny_engine();
  return *kEngine;
}

}  // namespace runnel::fuzz
