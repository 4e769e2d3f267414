#include "base/sha256.h"

#include <openssl/evp.h>

#include "base/error.h"

namespace ugrad {
namespace {

EVP_MD_CTX* ctx_of(const std::unique_ptr<void, void (*)(void*)>& p) {
  return static_cast<EVP_MD_CTX*>(p.get());
}

}  // namespace

Sha256::Sha256()
    : ctx_(EVP_MD_CTX_new(), [](void* c) { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(c)); }) {
  if (!ctx_ || EVP_DigestInit_ex(ctx_of(ctx_), EVP_sha256(), nullptr) != 1)
    internal_error("sha256: OpenSSL cannot start a SHA-256");
}

void Sha256::update(const void* data, size_t size) {
  UGRAD_ASSERT(!finished_);
  if (size > 0 && EVP_DigestUpdate(ctx_of(ctx_), data, size) != 1)
    internal_error("sha256: OpenSSL's update failed");
}

Sha256Digest Sha256::finish() {
  UGRAD_ASSERT(!finished_);
  finished_ = true;
  Sha256Digest digest;
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx_of(ctx_), digest.data(), &n) != 1 || n != digest.size())
    internal_error("sha256: OpenSSL's final step failed");
  return digest;
}

Sha256Digest sha256(const void* data, size_t size) {
  Sha256 hasher;
  hasher.update(data, size);
  return hasher.finish();
}

std::string to_hex(const Sha256Digest& digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(digest.size() * 2, '0');
  for (size_t i = 0; i < digest.size(); ++i) {
    out[2 * i] = kHex[digest[i] >> 4];
    out[2 * i + 1] = kHex[digest[i] & 15];
  }
  return out;
}

}  // namespace ugrad
