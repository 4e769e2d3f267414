// BPE merge lookup: (left token, right token) -> (rank, merged token) in one flat open-addressing
// table (linear probing, power-of-two size, load <= 1/2). This lookup is the inner loop of BPE,
// where std::unordered_map's node per entry costs a cache miss more.
#pragma once
#include <cstdint>
#include <vector>

namespace ugrad::llm {

using TokenId = int32_t;

class MergeTable {
 public:
  struct Merge {
    int32_t rank;
    TokenId result;
  };

  /// Sizes the table for `n` merges (call before inserting).
  void reserve(size_t n) {
    int bits = 4;
    while ((size_t{1} << bits) < 2 * n) ++bits;
    slots_.assign(size_t{1} << bits, Slot{kEmpty, {}});
    mask_ = slots_.size() - 1;
    shift_ = 64 - bits;
  }

  /// Adds a merge; returns false (and keeps the old one) if the pair is already there.
  bool insert(TokenId left, TokenId right, Merge merge) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    const uint64_t key = pack(left, right);
    for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
      if (slots_[i].key == key) return false;
      if (slots_[i].key == kEmpty) {
        slots_[i] = {key, merge};
        ++size_;
        return true;
      }
    }
  }

  /// The merge of the pair, or nullptr.
  const Merge* find(TokenId left, TokenId right) const {
    if (slots_.empty()) return nullptr;
    const uint64_t key = pack(left, right);
    for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
      if (slots_[i].key == key) return &slots_[i].merge;
      if (slots_[i].key == kEmpty) return nullptr;
    }
  }

  /// Number of merges stored.
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key;
    Merge merge;
  };
  // Token ids are non-negative, so (-1, -1) never occurs as a real pair.
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  static uint64_t pack(TokenId left, TokenId right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  size_t slot_of(uint64_t key) const {
    // Fibonacci hashing: multiply, keep the high bits (which depend on all input bits).
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    reserve(old.empty() ? 8 : old.size());
    size_ = 0;
    for (const Slot& s : old) {
      if (s.key != kEmpty)
        insert(static_cast<TokenId>(s.key >> 32), static_cast<TokenId>(s.key), s.merge);
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 60;
  size_t size_ = 0;
};

}  // namespace ugrad::llm
