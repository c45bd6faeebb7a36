// A model file that JavaScript reads for us: in Node a path (fs.readSync), in the
// browser worker an OPFS file (FileSystemSyncAccessHandle) or bytes already in JS
// memory. The JS side registers a reader under a source id (wasm/js/engine.js,
// Module.runnelRead); reads are synchronous and land straight in wasm memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/gguf/gguf.h"

namespace runnel::wasm {

class JsFile {
 public:
  JsFile(int source, uint64_t size, std::string name)
      : source_(source), size_(size), name_(std::move(name)) {}

  // Reads exactly n bytes at `offset` into dst. Throws GgufError naming the file when
  // the range is outside the file or the reader returns fewer bytes (a file that
  // changed or vanished underneath us).
  void read(uint64_t offset, uint8_t* dst, size_t n) const;

  // Parses the GGUF header, reading a growing prefix until it is complete.
  GgufFile parse_header() const;

  uint64_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  int source_;
  uint64_t size_;
  std::string name_;
};

}  // namespace runnel::wasm
