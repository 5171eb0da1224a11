#include "core/gzip.h"

#include <zlib.h>

#include <fmt/format.h>

namespace gpuvet {

bool looks_gzipped(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

Result<std::string> gunzip(std::string_view data, std::size_t max_bytes) {
  if (!looks_gzipped(data)) return Status::invalid_input("not gzip data");
  z_stream z{};
  // 16 + MAX_WBITS: a gzip header and trailer, not raw deflate or zlib.
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
    return Status::internal("zlib could not start inflating");
  std::string out;
  out.resize(std::min<std::size_t>(max_bytes, std::max<std::size_t>(data.size() * 4, 1 << 16)));
  std::size_t in_pos = 0, out_pos = 0;
  int rc = Z_OK;
  for (;;) {
    if (out_pos == out.size()) {
      if (out.size() >= max_bytes) {
        inflateEnd(&z);
        return Status::invalid_input(
            fmt::format("gzip input inflates to more than {} MiB", max_bytes >> 20));
      }
      out.resize(std::min(max_bytes, out.size() * 2));
    }
    const std::size_t in_chunk = std::min<std::size_t>(data.size() - in_pos, 1u << 30);
    const std::size_t out_chunk = std::min<std::size_t>(out.size() - out_pos, 1u << 30);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + in_pos));
    z.avail_in = static_cast<uInt>(in_chunk);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + out_pos);
    z.avail_out = static_cast<uInt>(out_chunk);
    rc = inflate(&z, Z_NO_FLUSH);
    in_pos += in_chunk - z.avail_in;
    out_pos += out_chunk - z.avail_out;
    if (rc == Z_STREAM_END) {
      // Several gzip members one after the other (cat a.gz b.gz) are one stream.
      if (in_pos < data.size() && looks_gzipped(data.substr(in_pos))) {
        inflateReset(&z);
        continue;
      }
      break;
    }
    if (rc == Z_BUF_ERROR && in_pos >= data.size()) {
      inflateEnd(&z);
      return Status::invalid_input(
          fmt::format("gzip input cut short after {} compressed bytes", data.size()));
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const std::string why = z.msg ? z.msg : "corrupt data";
      inflateEnd(&z);
      return Status::invalid_input(
          fmt::format("gzip input is corrupt ({}) at byte {}", why, in_pos));
    }
  }
  inflateEnd(&z);
  out.resize(out_pos);
  return out;
}

std::string gunzip_prefix(std::string_view data, std::size_t max_bytes) {
  std::string out;
  if (!looks_gzipped(data) || max_bytes == 0) return out;
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return out;
  out.resize(max_bytes);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(std::min<std::size_t>(data.size(), 1u << 30));
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(std::min<std::size_t>(max_bytes, 1u << 30));
  inflate(&z, Z_SYNC_FLUSH);  // stops where the input or the room ends; either is fine here
  out.resize(z.total_out);
  inflateEnd(&z);
  return out;
}

}  // namespace gpuvet
