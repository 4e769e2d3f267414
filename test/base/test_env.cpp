#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "base/env.h"
#include "base/error.h"

using namespace ugrad;

TEST_CASE("every knob is documented in docs/env.md, and nothing else is") {
  std::ifstream f(std::string(UGRAD_SOURCE_DIR) + "/docs/env.md");
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  std::string doc = ss.str();
  size_t rows = 0;
  for (const KnobInfo& k : all_knobs()) {
    CHECK_MESSAGE(doc.find("| `" + std::string(k.name) + "` |") != std::string::npos, k.name);
    ++rows;
  }
  // Every table row in the doc is a knob: count rows that start with "| `".
  size_t doc_rows = 0;
  for (size_t p = doc.find("\n| `"); p != std::string::npos; p = doc.find("\n| `", p + 1))
    ++doc_rows;
  CHECK(doc_rows == rows);
}

TEST_CASE("knob overrides, defaults and bad values") {
  CHECK(knob_str(Knob::DEV) == (std::getenv("DEV") ? std::getenv("DEV") : "CPU"));
  {
    ScopedKnob s(Knob::DEBUG, "4");
    CHECK(debug_level() == 4);
    CHECK(knob_int(Knob::DEBUG) == 4);
    {
      ScopedKnob t(Knob::DEBUG, "x7");
      CHECK_THROWS_WITH_AS(knob_int(Knob::DEBUG), doctest::Contains("DEBUG"), Error);
    }
    CHECK(debug_level() == 4);
  }
}
