// Tokenizer::from_metadata: picks the algorithm tokenizer.ggml.model names.
#include "core/tokenizer/tokenizer.h"

#include <algorithm>

#include "core/tokenizer/bpe.h"
#include "core/tokenizer/spm.h"
#include "core/tokenizer/wpm.h"

namespace runnel {

std::unique_ptr<Tokenizer> Tokenizer::from_metadata(const GgufMetadata& md) {
  const std::optional<std::string> model = md.find_string("tokenizer.ggml.model");
  if (!model) throw GgufError("metadata key 'tokenizer.ggml.model' is missing");
  if (*model == "llama") return std::make_unique<SpmTokenizer>(md);
  if (*model == "bert") return std::make_unique<WpmTokenizer>(md);
  if (*model == "gpt2") {
    // A missing pre-tokenizer means "default" (llama.cpp warns that quality suffers).
    const std::string pre = md.find_string("tokenizer.ggml.pre").value_or("default");
    const std::optional<PreTokenizerSpec> spec = find_pre_tokenizer(pre);
    if (!spec) throw GgufError("unknown pre-tokenizer '" + pre + "' (tokenizer.ggml.pre)");
    return std::make_unique<BpeTokenizer>(md, *spec);
  }
  throw GgufError("unsupported tokenizer model '" + *model +
                  "' (tokenizer.ggml.model; expected llama, gpt2 or bert)");
}

bool Tokenizer::is_eog(TokenId id) const {
  return id >= 0 && std::find(eog_ids_.begin(), eog_ids_.end(), id) != eog_ids_.end();
}

}  // namespace runnel
