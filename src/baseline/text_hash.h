// baseline/text_hash.h — text_hash (gpuvet/baseline.h) of a text given in pieces, so that a
// document can be hashed as it is parsed, without writing its text out first:
// TextHash().add(a).add(b).hex() == text_hash(a + b). A value type; not shared between threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpuvet {

class TextHash {
 public:
  TextHash& add(std::string_view piece) {
    for (const unsigned char c : piece) add_byte(c);
    return *this;
  }
  TextHash& add(char c) {
    add_byte(static_cast<unsigned char>(c));
    return *this;
  }
  std::string hex() const;  // 16 hex digits

 private:
  void add_byte(unsigned char c) {  // FNV-1a 64
    state_ ^= c;
    state_ *= 1099511628211ull;
  }
  std::uint64_t state_ = 1469598103934665603ull;
};

}  // namespace gpuvet
