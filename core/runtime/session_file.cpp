#include "core/runtime/session_file.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <type_traits>

namespace runnel {
namespace {

constexpr char kMagic[8] = {'R', 'N', 'L', 'S', 'E', 'S', 'S', '\0'};
constexpr uint32_t kVersion = 2;  // 2: each layer's cache starts with its first position

uint64_t fnv1a(const uint8_t* p, size_t n, uint64_t h = 1469598103934665603ull) {
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  // Little-endian, byte by byte (whatever the host).
  using U = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  U u;
  std::memcpy(&u, &v, sizeof(T));
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<uint8_t>(u >> (8 * i)));
}

class Reader {
 public:
  Reader(std::span<const uint8_t> bytes, const std::string& name) : bytes_(bytes), name_(name) {}
  template <typename T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  const uint8_t* take(size_t n, const char* what) {
    need(n, what);
    const uint8_t* p = bytes_.data() + at_;
    at_ += n;
    return p;
  }
  size_t at() const { return at_; }
  [[noreturn]] void fail(const std::string& why) const { throw std::runtime_error("session " + name_ + ": " + why); }

 private:
  void need(size_t n, const char* what) const {
    if (bytes_.size() - at_ < n) fail(std::string("truncated (ends inside the ") + what + ")");
  }
  std::span<const uint8_t> bytes_;
  std::string name_;
  size_t at_ = 0;
};

}  // namespace

uint64_t model_fingerprint(const GgufModel& model) {
  std::vector<uint8_t> buf;
  const auto add = [&](const std::string& s) {
    buf.insert(buf.end(), s.begin(), s.end());
    buf.push_back(0);
  };
  for (const GgufTensorInfo& t : model.tensors) {
    add(t.name);
    put(buf, static_cast<uint32_t>(t.type));
    for (uint64_t d : t.dims) put(buf, d);
    put(buf, t.offset);
  }
  for (const char* key : {"general.architecture", "tokenizer.ggml.model", "tokenizer.ggml.pre"}) {
    if (auto v = model.metadata.find_string(key)) add(*v);
  }
  if (const auto* tokens = model.metadata.find_string_array("tokenizer.ggml.tokens")) {
    put(buf, static_cast<uint64_t>(tokens->size()));
    for (const std::string& t : *tokens) add(t);
  }
  return fnv1a(buf.data(), buf.size());
}

std::vector<uint8_t> serialize_session(const Session& session, uint64_t fingerprint) {
  const KvCache& kv = session.kv_cache();
  const int n = session.n_evaluated();
  std::vector<uint8_t> out(sizeof kMagic);
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  put(out, kVersion);
  put(out, fingerprint);
  put(out, static_cast<uint32_t>(kv.type()));
  put(out, static_cast<uint32_t>(kv.n_layer()));
  put(out, static_cast<uint32_t>(kv.k_dim()));
  put(out, static_cast<uint32_t>(kv.v_dim()));
  put(out, static_cast<uint32_t>(session.tokens().size()));
  put(out, static_cast<uint32_t>(n));
  for (const TokenId t : session.tokens()) put(out, static_cast<int32_t>(t));
  kv.save_positions(n, out);
  put(out, fnv1a(out.data(), out.size()));
  return out;
}

void restore_session(Session& session, std::span<const uint8_t> bytes, uint64_t fingerprint,
                     const std::string& name) {
  Reader r(bytes, name);
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    r.fail("not a runnel session file (bad magic)");
  }
  r.take(sizeof kMagic, "magic");
  const uint32_t version = r.get<uint32_t>("version");
  if (version != kVersion) {
    r.fail("format version " + std::to_string(version) + " is not supported (this runnel reads " +
           std::to_string(kVersion) + ")");
  }
  if (bytes.size() < sizeof(uint64_t) + r.at()) r.fail("truncated");
  const size_t body = bytes.size() - sizeof(uint64_t);
  uint64_t stored_sum;
  std::memcpy(&stored_sum, bytes.data() + body, sizeof stored_sum);
  if (fnv1a(bytes.data(), body) != stored_sum) r.fail("checksum mismatch: the file is damaged or truncated");
  if (r.get<uint64_t>("fingerprint") != fingerprint) r.fail("it was saved with another model");
  const KvCache& kv = session.kv_cache();
  const auto type = static_cast<GgmlType>(r.get<uint32_t>("kv type"));
  if (type != kv.type()) {
    r.fail("its KV cache is " + std::string(kv_type_name(type)) + " but this run uses --kv-type " +
           std::string(kv_type_name(kv.type())));
  }
  const uint32_t n_layer = r.get<uint32_t>("n_layer"), k_dim = r.get<uint32_t>("k_dim"),
                 v_dim = r.get<uint32_t>("v_dim");
  if (static_cast<int>(n_layer) != kv.n_layer() || static_cast<int>(k_dim) != kv.k_dim() ||
      static_cast<int>(v_dim) != kv.v_dim()) {
    r.fail("its cache shape does not match the model");
  }
  const uint32_t n = r.get<uint32_t>("token count");
  const uint32_t n_cached = r.get<uint32_t>("cached count");
  if (n > static_cast<uint32_t>(kv.n_ctx())) {
    r.fail("it holds " + std::to_string(n) + " tokens but the context is " + std::to_string(kv.n_ctx()) +
           " (raise -c)");
  }
  std::vector<TokenId> tokens(n);
  for (uint32_t i = 0; i < n; ++i) tokens[i] = r.get<int32_t>("tokens");
  const size_t kv_n = body - r.at();
  const uint8_t* kv_bytes = r.take(kv_n, "cache");
  try {
    session.restore(std::move(tokens), static_cast<int>(n_cached), kv_bytes, kv_n);
  } catch (const std::invalid_argument& e) {
    r.fail(e.what());
  }
}

void save_session_file(const std::string& path, const Session& session, uint64_t fingerprint) {
  const std::vector<uint8_t> bytes = serialize_session(session, fingerprint);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("session " + path + ": cannot write " + tmp);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) throw std::runtime_error("session " + path + ": writing " + tmp + " failed (disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("session " + path + ": cannot replace the file");
  }
}

bool load_session_file(const std::string& path, Session& session, uint64_t fingerprint) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  restore_session(session, bytes, fingerprint, path);
  return true;
}

}  // namespace runnel
