#include "runtime/amd/amd_link.h"

#include <lld/Common/Driver.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/raw_ostream.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>

#include "base/error.h"

LLD_HAS_DRIVER(elf)

namespace ugrad {

namespace {

std::mutex g_lld_mutex;                // lld keeps global state: one link at a time
std::atomic<bool> g_lld_usable{true};  // false once lld reports !canRunAgain

// A private temp directory holding k.o and k.hsaco for one link; removed on scope exit.
class TempDir {
 public:
  explicit TempDir(std::string_view what) {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ugrad-lld-XXXXXX";
    if (!mkdtemp(tmpl.data())) fail("amdgpu: {}: cannot create a temp dir in {}", what, tmpl);
    path_ = tmpl;
  }
  ~TempDir() {
    std::remove((path_ + "/k.o").c_str());
    std::remove((path_ + "/k.hsaco").c_str());
    ::rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void write_file(const std::string& path, std::span<const uint8_t> bytes, std::string_view what) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) fail("amdgpu: {}: cannot write {}", what, path);
}

std::vector<uint8_t> read_file(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("amdgpu: {}: linker produced no {}", what, path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::vector<uint8_t> link_in_process(const TempDir& dir, std::string_view what, bool& ran) {
  std::string in = dir.path() + "/k.o", out = dir.path() + "/k.hsaco";
  // --threads=1: one small object gains nothing from lld's thread pool.
  const char* args[] = {"ld.lld", "-shared",   "--no-undefined", "--threads=1",
                        "-o",     out.c_str(), in.c_str()};
  std::string diagnostics;
  llvm::raw_string_ostream diag_os(diagnostics);
  std::lock_guard<std::mutex> lock(g_lld_mutex);
  if (!g_lld_usable.load()) return {};
  lld::Result r = lld::lldMain(args, diag_os, diag_os, {{lld::Gnu, &lld::elf::link}});
  ran = true;
  if (!r.canRunAgain) g_lld_usable.store(false);
  if (r.retCode != 0) fail("amdgpu: {}: lld failed ({}): {}", what, r.retCode, diag_os.str());
  return read_file(out, what);
}

std::vector<uint8_t> link_subprocess(const TempDir& dir, std::string_view what) {
  std::string in = dir.path() + "/k.o", out = dir.path() + "/k.hsaco", log = dir.path() + "/log";
  std::string exe(amd_ld_lld_path());
  llvm::StringRef args[] = {exe, "-shared", "--no-undefined", "--threads=1", "-o", out, in};
  std::string err;
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                                llvm::StringRef(log)};
  int rc = llvm::sys::ExecuteAndWait(exe, args, std::nullopt, redirects, 0, 0, &err);
  std::ifstream log_in(log);
  std::string log_text((std::istreambuf_iterator<char>(log_in)), {});
  std::remove(log.c_str());
  if (rc != 0)
    fail("amdgpu: {}: {} failed ({}{}): {}", what, exe, rc, err.empty() ? "" : ", " + err,
         log_text);
  return read_file(out, what);
}

}  // namespace

std::string_view amd_ld_lld_path() { return "/usr/lib/llvm-19/bin/ld.lld"; }

std::vector<uint8_t> amd_link(std::span<const uint8_t> relocatable, std::string_view what,
                              AmdLinker linker) {
  TempDir dir(what);
  write_file(dir.path() + "/k.o", relocatable, what);
  if (linker == AmdLinker::InProcess) {
    bool ran = false;
    std::vector<uint8_t> out = link_in_process(dir, what, ran);
    if (ran) return out;
    // lld said it cannot run again in this process: fall through to the subprocess.
  }
  return link_subprocess(dir, what);
}

}  // namespace ugrad
