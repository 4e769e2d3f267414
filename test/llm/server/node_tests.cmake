# `llm serve` driven from the outside by Node.js (included from test/llm/server/CMakeLists.txt):
#   server_test_deps      fixture: scripts/server_test_deps.sh npm-installs package.json's pinned
#                         openai and puppeteer-core into ${CMAKE_BINARY_DIR}/server_test (once)
#   server_demo_model     fixture: a small random-weight Qwen3 GGUF (make_demo_model) to serve
#   server_openai_client  openai_client.mjs: the official openai client, fetch and curl against
#                         the server (streaming, stop strings, queueing and 429, API key, errors)
#   server_chat_page      chat_page.mjs: the page at / in headless /usr/bin/chromium; labelled
#                         slow, so the sanitizer pass skips the browser
# The scripts run in ${CMAKE_BINARY_DIR}/server_test, where their npm packages resolve from.
# Without the fixtures (npm unreachable, say) CTest reports the Node.js tests as not run.
set(UGRAD_SERVER_TEST_DIR ${CMAKE_BINARY_DIR}/server_test)
set(UGRAD_SERVE_MODEL ${CMAKE_CURRENT_BINARY_DIR}/serve_demo.gguf)

add_test(NAME server_test_deps
  COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/server_test_deps.sh ${CMAKE_BINARY_DIR})
set_tests_properties(server_test_deps PROPERTIES FIXTURES_SETUP server_node TIMEOUT 600)

add_test(NAME server_demo_model
  COMMAND $<TARGET_FILE:make_demo_model> -o ${UGRAD_SERVE_MODEL} --type Q8_0 --layers 2
          --dim 128 --heads 4 --kv-heads 2 --head-dim 32 --ffn 256)
set_tests_properties(server_demo_model PROPERTIES FIXTURES_SETUP serve_model)

foreach(name openai_client chat_page)
  add_test(NAME server_${name}
    COMMAND node ${CMAKE_CURRENT_LIST_DIR}/${name}.mjs $<TARGET_FILE:llm> ${UGRAD_SERVE_MODEL}
    WORKING_DIRECTORY ${UGRAD_SERVER_TEST_DIR})
  set_tests_properties(server_${name} PROPERTIES
    FIXTURES_REQUIRED "server_node;serve_model" TIMEOUT 300)
endforeach()
set_tests_properties(server_chat_page PROPERTIES LABELS slow)
