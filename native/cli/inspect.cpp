// runnel inspect: the metadata and tensor table of a GGUF model.
#include <cinttypes>
#include <cstdlib>
#include <thread>
#include <cstdio>
#include <sstream>
#include <string>

#include "core/chat/chat_template.h"
#include "native/cli/args.h"
#include "native/cli/commands.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "native/cpu_topology.h"
#include "native/mmap_store.h"
#include "native/version.h"
#if defined(__x86_64__)
#include "kernels/x86/x86.h"
#endif

namespace runnel::cli {
namespace {

constexpr size_t kArrayItemsShown = 5;
constexpr size_t kStringCharsShown = 80;

// A string as one printable line: escapes, and long text cut with "...".
std::string shown_string(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == kStringCharsShown) {
      out += "...";
      break;
    }
    const char ch = s[i];
    if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(ch));
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string shown_double(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

template <typename T, typename Show>
std::string shown_array(const GgufValue& v, const std::vector<T>& items, Show show) {
  std::string s =
      std::string(gguf_type_name(v.elem_type)) + "[" + std::to_string(items.size()) + "] [";
  for (size_t i = 0; i < items.size() && i < kArrayItemsShown; ++i) {
    s += (i ? ", " : "") + show(items[i]);
  }
  if (items.size() > kArrayItemsShown) s += ", ...";
  return s + "]";
}

std::string shown_value(const GgufValue& v) {
  auto num_u = [](uint64_t x) { return std::to_string(x); };
  auto num_i = [](int64_t x) { return std::to_string(x); };
  auto boolean = [](bool x) { return std::string(x ? "true" : "false"); };
  return std::visit(
      [&](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, uint64_t>) return num_u(x);
        if constexpr (std::is_same_v<T, int64_t>) return num_i(x);
        if constexpr (std::is_same_v<T, double>) return shown_double(x);
        if constexpr (std::is_same_v<T, bool>) return boolean(x);
        if constexpr (std::is_same_v<T, std::string>) return shown_string(x);
        if constexpr (std::is_same_v<T, std::vector<uint64_t>>) return shown_array(v, x, num_u);
        if constexpr (std::is_same_v<T, std::vector<int64_t>>) return shown_array(v, x, num_i);
        if constexpr (std::is_same_v<T, std::vector<double>>) {
          return shown_array(v, x, shown_double);
        }
        if constexpr (std::is_same_v<T, std::vector<bool>>) return shown_array(v, x, boolean);
        if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          return shown_array(v, x, shown_string);
        }
      },
      v.value);
}

std::string shown_dims(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace

namespace {

// `runnel inspect --cpu`: what the kernel dispatch saw and chose.
int inspect_cpu() {
  select_kernels_from_env();
  std::printf("%s\n", version_string().c_str());
  std::printf("cpu: %u logical CPUs, %d physical cores (the default thread count)\n",
              std::thread::hardware_concurrency(), physical_core_count());
#if defined(__x86_64__)
  __builtin_cpu_init();
  std::printf("features:");
  const auto has = [](const char* name, bool on) {
    if (on) std::printf(" %s", name);
  };
  has("sse4.2", __builtin_cpu_supports("sse4.2"));
  has("avx", __builtin_cpu_supports("avx"));
  has("avx2", __builtin_cpu_supports("avx2"));
  has("fma", __builtin_cpu_supports("fma"));
  has("f16c", cpu_has_avx2());
  has("avx512f", __builtin_cpu_supports("avx512f"));
  has("avx512bw", __builtin_cpu_supports("avx512bw"));
  has("avx512vl", __builtin_cpu_supports("avx512vl"));
  has("avx512vnni", __builtin_cpu_supports("avx512vnni"));
  has("avx512bf16", __builtin_cpu_supports("avx512bf16"));
  std::printf("\n");
#endif
  const char* forced = std::getenv("RUNNEL_ISA");
  std::printf("kernels: %s (%s)\n", std::string(kernels().isa).c_str(),
              forced && *forced ? "forced by RUNNEL_ISA" : "chosen at start-up");
  std::printf("float ops: %s\n", std::string(float_ops().isa).c_str());
  return 0;
}

}  // namespace

int inspect_command(const std::vector<std::string>& args) {
  if (args.size() == 1 && args[0] == "--cpu") return inspect_cpu();
  std::string path;
  ArgParser p("runnel inspect FILE | runnel inspect --cpu",
              "Prints the metadata and the tensor table of a GGUF file; with --cpu, the CPU features\n"
              "and the kernel set chosen for them.");
  p.positional("FILE", &path, "GGUF file (the first part brings in a split model's others)");
  if (p.parse_or_print_help(args)) return 0;

  const std::unique_ptr<MmapStore> store = MmapStore::open(path);
  const GgufModel& model = store->model();
  // After the open: a file that fails to open leaves stdout empty.
  std::printf("%s\n", version_string().c_str());
  for (const GgufFile& f : model.files) {
    std::printf("file: %s (GGUF v%u, %zu bytes, alignment %" PRIu64 ", data at %" PRIu64 ")\n",
                f.name().c_str(), f.version(), static_cast<size_t>(f.file_size()), f.alignment(),
                f.data_offset());
  }
  std::printf("\nmetadata (%zu keys):\n", model.metadata.entries().size());
  for (const auto& [key, value] : model.metadata.entries()) {
    std::printf("  %s = %s\n", key.c_str(), shown_value(value).c_str());
  }
  // The template chats are rendered with: the file's own, or the architecture's built-in.
  const ChatTemplateChoice chat = choose_chat_template(model.metadata);
  std::string chat_line = chat.description();
  try {
    ChatTemplate::parse(chat.source);
  } catch (const ChatTemplateError& e) {
    chat_line += "; chat requests fail: " + std::string(e.what());
  }
  std::printf("\nchat template: %s\n", chat_line.c_str());
  const bool split = model.files.size() > 1;
  std::printf("\ntensors (%zu):\n", model.tensors.size());
  std::printf("  %-40s %-6s %-20s %14s %12s%s\n", "name", "type", "dims", "offset", "bytes",
              split ? "  file" : "");
  uint64_t total = 0;
  for (const GgufTensorInfo& t : model.tensors) {
    const std::optional<TypeTraits> tr = type_traits(static_cast<uint32_t>(t.type));
    const std::string type = tr ? std::string(tr->name) : std::to_string(static_cast<int>(t.type));
    std::printf("  %-40s %-6s %-20s %14" PRIu64 " %12" PRIu64, t.name.c_str(), type.c_str(),
                shown_dims(t.dims).c_str(), t.offset, t.n_bytes);
    if (split) std::printf("  %u", t.file_index);
    std::printf("\n");
    total += t.n_bytes;
  }
  std::printf("\ntotal tensor bytes: %" PRIu64 "\n", total);
  return 0;
}

}  // namespace runnel::cli
