# Writes OUTPUT, a C++ file defining chat_page_html() as the bytes of INPUT (cmake -P).
file(READ "${INPUT}" page)
string(FIND "${page}" ")ugrad_page\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string's closing delimiter")
endif()
file(WRITE "${OUTPUT}" "// Generated from chat.html by embed_page.cmake.\n#include \"llm/server/chat_page.h\"\n\nnamespace ugrad::llm {\n\nstd::string_view chat_page_html() {\n  return R\"ugrad_page(${page})ugrad_page\";\n}\n\n}  // namespace ugrad::llm\n")
