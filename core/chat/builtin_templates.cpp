#include "core/chat/builtin_templates.h"

#include "core/chat/chat_template.h"

namespace runnel {

namespace {

// ChatML (<|im_start|>role\ncontent<|im_end|>\n): llama, qwen2 and unknown architectures.
constexpr std::string_view kChatMl =
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// Gemma (1, 2 and 3) as Gemma 3's official template: BOS first, turns must alternate
// user/model, a system message is folded into the first user turn followed by a blank
// line, and turn contents are trimmed.
constexpr std::string_view kGemmaTemplate = R"jinja(
{{- bos_token -}}
{%- set ns = namespace(prefix='') -%}
{%- set turns = messages -%}
{%- if messages and messages[0]['role'] == 'system' -%}
    {%- set ns.prefix = messages[0]['content'] + '\n\n' -%}
    {%- set turns = messages[1:] -%}
{%- endif -%}
{%- for message in turns -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{- raise_exception('Conversation roles must alternate '
                            'user/assistant/user/assistant/...') -}}
    {%- endif -%}
    {%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}
    {{- '<start_of_turn>' + role + '\n' -}}
    {%- if loop.first -%}{{- ns.prefix -}}{%- endif -%}
    {{- message['content'] | trim -}}
    {{- '<end_of_turn>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{- '<start_of_turn>model\n' -}}
{%- endif -%}
)jinja";

// Phi-3 (3.5's official template): <|role|>\ncontent<|end|>\n per message, empty system
// messages left out, EOS closing a conversation that asks for no reply.
constexpr std::string_view kPhi3Template = R"jinja(
{%- for message in messages -%}
    {%- if message['role'] == 'system' and message['content'] -%}
        {{- '<|system|>\n' + message['content'] + '<|end|>\n' -}}
    {%- elif message['role'] == 'user' -%}
        {{- '<|user|>\n' + message['content'] + '<|end|>\n' -}}
    {%- elif message['role'] == 'assistant' -%}
        {{- '<|assistant|>\n' + message['content'] + '<|end|>\n' -}}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{- '<|assistant|>\n' -}}
{%- else -%}
    {{- eos_token -}}
{%- endif -%}
)jinja";

// Qwen3 (its official template without tools): ChatML; an assistant turn after the last
// real user query keeps its reasoning as <think>...</think> (the final one always gets
// the block), earlier turns lose it; tool results are grouped into one user turn.
// `enable_thinking` false opens the reply with an empty think block, which is how Qwen3
// is told not to reason; undefined or true leaves the model to open its own.
constexpr std::string_view kQwen3Template = R"jinja(
{%- if messages and messages[0]['role'] == 'system' -%}
    {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' -}}
{%- endif -%}
{%- set ns = namespace(found=false, last_query=messages|length - 1) -%}
{%- for message in messages[::-1] -%}
    {%- set c = message['content'] -%}
    {%- set tool_result = c.startswith('<tool_response>') and c.endswith('</tool_response>') -%}
    {%- if not ns.found and message['role'] == 'user' and not tool_result -%}
        {%- set ns.found = true -%}
        {%- set ns.last_query = messages|length - 1 - loop.index0 -%}
    {%- endif -%}
{%- endfor -%}
{%- for message in messages -%}
    {%- set content = message['content'] -%}
    {%- if message['role'] == 'user' or (message['role'] == 'system' and not loop.first) -%}
        {{- '<|im_start|>' + message['role'] + '\n' + content + '<|im_end|>\n' -}}
    {%- elif message['role'] == 'assistant' -%}
        {%- set reasoning = '' -%}
        {%- if '</think>' in content -%}
            {%- set reasoning = content.split('</think>')[0].rstrip('\n') -%}
            {%- set reasoning = reasoning.split('<think>')[-1].lstrip('\n') -%}
            {%- set content = content.split('</think>')[-1].lstrip('\n') -%}
        {%- endif -%}
        {%- if loop.index0 > ns.last_query and (loop.last or reasoning) -%}
            {{- '<|im_start|>assistant\n<think>\n' + reasoning.strip('\n') + '\n</think>\n\n' -}}
            {{- content.lstrip('\n') -}}
        {%- else -%}
            {{- '<|im_start|>assistant\n' + content -}}
        {%- endif -%}
        {{- '<|im_end|>\n' -}}
    {%- elif message['role'] == 'tool' -%}
        {%- if loop.first or messages[loop.index0 - 1]['role'] != 'tool' -%}
            {{- '<|im_start|>user' -}}
        {%- endif -%}
        {{- '\n<tool_response>\n' + content + '\n</tool_response>' -}}
        {%- if loop.last or messages[loop.index0 + 1]['role'] != 'tool' -%}
            {{- '<|im_end|>\n' -}}
        {%- endif -%}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{- '<|im_start|>assistant\n' -}}
    {%- if enable_thinking is defined and enable_thinking is false -%}
        {{- '<think>\n\n</think>\n\n' -}}
    {%- endif -%}
{%- endif -%}
)jinja";

constexpr BuiltinChatTemplate kBuiltins[] = {
    {"chatml", kChatMl},
    {"gemma", kGemmaTemplate},
    {"phi3", kPhi3Template},
    {"qwen3", kQwen3Template},
};

}  // namespace

const char* const kChatMlTemplate = kChatMl.data();

BuiltinChatTemplate builtin_chat_template(std::string_view name) {
  for (const BuiltinChatTemplate& t : kBuiltins) {
    if (t.name == name) return t;
  }
  return {name, {}};
}

BuiltinChatTemplate builtin_chat_template_for_architecture(std::string_view architecture) {
  if (architecture == "gemma" || architecture == "gemma2" || architecture == "gemma3") {
    return builtin_chat_template("gemma");
  }
  if (architecture == "phi3") return builtin_chat_template("phi3");
  if (architecture == "qwen3") return builtin_chat_template("qwen3");
  // llama, qwen2 and architectures without a known format: ChatML, as before.
  return builtin_chat_template("chatml");
}

}  // namespace runnel
