// The chat page (chat.html), built into the binary: the build embeds the file as it is.
#pragma once
#include <string_view>

namespace ugrad::llm {

/// The page's HTML.
std::string_view chat_page_html();

}  // namespace ugrad::llm
