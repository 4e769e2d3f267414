// SHA-256 (OpenSSL's), for content-addressed cache keys and downloaded files' checksums.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace ugrad {

/// A 32-byte SHA-256 digest.
using Sha256Digest = std::array<uint8_t, 32>;

/// Incremental SHA-256: update() any number of times, then finish() once.
class Sha256 {
 public:
  Sha256();
  /// Appends `size` bytes at `data` to the message.
  void update(const void* data, size_t size);
  /// Appends the bytes of `text` to the message.
  void update(std::string_view text) { update(text.data(), text.size()); }
  /// The message's digest; the object must not be updated afterwards.
  Sha256Digest finish();

 private:
  std::unique_ptr<void, void (*)(void*)> ctx_;  // OpenSSL's EVP_MD_CTX: movable, not copied
  bool finished_ = false;
};

/// The SHA-256 digest of `size` bytes at `data`.
Sha256Digest sha256(const void* data, size_t size);
/// The SHA-256 digest of the bytes of `text`.
inline Sha256Digest sha256(std::string_view text) { return sha256(text.data(), text.size()); }
/// Lowercase hexadecimal text of a digest (64 characters).
std::string to_hex(const Sha256Digest& digest);
/// Lowercase hexadecimal SHA-256 of the bytes of `text`.
inline std::string sha256_hex(std::string_view text) { return to_hex(sha256(text)); }

}  // namespace ugrad
