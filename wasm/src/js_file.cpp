#include "wasm/src/js_file.h"

#include <emscripten.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

// Returns the bytes read (< n at the end of the file), or -1 when the reader failed.
// Offsets travel as doubles: exact up to 2^53, files beyond 4 GiB are fine.
// clang-format off
EM_JS(double, runnel_js_read, (int source, double offset, uint8_t* dst, double n), {
  try {
    return Module.runnelRead(source, offset, new Uint8Array(wasmMemory.buffer, dst >>> 0, n));
  } catch (e) {
    Module.runnelReadError = String((e && e.message) || e);
    return -1;
  }
});
// The message of the last failed read (caller frees), or null.
EM_JS(char*, runnel_js_read_error, (), {
  const text = Module.runnelReadError;
  if (!text) return 0;
  Module.runnelReadError = undefined;
  const size = lengthBytesUTF8(text) + 1;
  const ptr = _malloc(size);
  stringToUTF8(text, ptr, size);
  return ptr;
});
// clang-format on

namespace runnel::wasm {

void JsFile::read(uint64_t offset, uint8_t* dst, size_t n) const {
  if (offset > size_ || n > size_ - offset) {
    throw GgufError(name_ + ": read of " + std::to_string(n) + " bytes at offset " +
                    std::to_string(offset) + " is past the end of the file (" +
                    std::to_string(size_) + " bytes)");
  }
  size_t done = 0;
  while (done < n) {
    // Chunks of at most 64 MiB keep every typed-array view small.
    const size_t chunk = std::min<size_t>(n - done, size_t{64} << 20);
    const double got = runnel_js_read(source_, static_cast<double>(offset + done), dst + done,
                                      static_cast<double>(chunk));
    if (got <= 0) {
      std::string why = "unexpected end";
      if (got < 0) {
        why = "read error";
        if (char* message = runnel_js_read_error()) {
          why += ": " + std::string(message);
          std::free(message);
        }
      }
      throw GgufError(name_ + ": reading " + std::to_string(chunk) + " bytes at offset " +
                      std::to_string(offset + done) + " failed (" + why + "); was the file changed or removed?");
    }
    done += static_cast<size_t>(got);
  }
}

GgufFile JsFile::parse_header() const {
  // A larger "header" is a corrupt length field, not a model.
  constexpr uint64_t kMaxHeaderBytes = uint64_t{256} << 20;
  // Most headers (metadata + tokenizer + tensor table) fit in a few MiB; large
  // vocabularies need more. Grow until the parse no longer runs out of bytes.
  uint64_t prefix = std::min<uint64_t>(size_, uint64_t{4} << 20);
  while (true) {
    std::vector<uint8_t> bytes(static_cast<size_t>(prefix));
    read(0, bytes.data(), bytes.size());
    try {
      return GgufFile::parse(bytes, size_, name_);
    } catch (const GgufError& e) {
      const bool truncated = std::string_view(e.what()).find("truncated header") != std::string_view::npos;
      if (!truncated || prefix == size_) throw;
      if (prefix >= kMaxHeaderBytes) {
        throw GgufError(name_ + ": the header does not end within the first " +
                        std::to_string(kMaxHeaderBytes >> 20) + " MiB (" + e.what() + ")");
      }
      prefix = std::min<uint64_t>({size_, prefix * 4, kMaxHeaderBytes});
    }
  }
}

}  // namespace runnel::wasm
