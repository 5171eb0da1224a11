// report/json.cc — the gpuvet.report/1 writer. The keys, their order and the nesting come from
// core/facts_fields.h; what is special to the document is written here.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/facts_fields.h"
#include "core/pair_matrix.h"
#include "core/util.h"
#include "gpuvet/report.h"
#include "report/json_document.h"

namespace gpuvet {
namespace {

using json = nlohmann::ordered_json;

// One value as report/1 spells it: null for "not known", enums by name, structs through their
// fields() (ObjectWriter below), maps and ordered (name, value) lists as objects.
template <class T>
json to_json(const T& v);

// Writes the fields of one struct into a JSON object, in the order fields() lists them.
class ObjectWriter {
 public:
  explicit ObjectWriter(json& out) : out_(out) {}

  template <class T>
  void operator()(std::string_view key, const T& value) {
    out_[std::string(key)] = to_json(value);
  }
  template <class T>
  void operator()(std::string_view key, const T& value, FieldTag) {
    (*this)(key, value);
  }
  void operator()(std::string_view key, const std::vector<int>& ids, IdList) {
    out_[std::string(key)] = ids.empty() ? json(nullptr) : json(format_cpu_list(ids));
  }
  void operator()(std::string_view key, const std::vector<int>& ids, IdListOrEmpty) {
    out_[std::string(key)] = format_cpu_list(ids);
  }
  // Past kPairsListed pairs, "pairs" is empty and "pair_matrix" holds them as rows of cells
  // (core/pair_matrix.h): one object per pair made a 1024-GPU node's facts 139 MB.
  void operator()(std::string_view key, const std::vector<GpuPair>& pairs) {
    if (pairs.size() <= kPairsListed) {
      out_[std::string(key)] = to_json(pairs);
      return;
    }
    out_[std::string(key)] = json::array();
    PairMatrix m = encode_pair_matrix(pairs);
    json p2p = json::object();
    for (auto& [name, rows] : m.p2p) p2p[name] = std::move(rows);
    out_["pair_matrix"] = {
        {"gpus", std::move(m.gpus)}, {"path", std::move(m.path)}, {"p2p", std::move(p2p)}};
  }
  // report/1 writes the Xids beside the kernel log, not in it: "kernel_log", then "xids".
  void operator()(std::string_view key, const KernelLog& log) {
    json k = to_json(log);
    json xids = std::move(k["xids"]);
    k.erase("xids");
    out_[std::string(key)] = std::move(k);
    out_["xids"] = std::move(xids);
  }
  template <class Fn>
  void nested(std::string_view key, Fn&& fn) {
    json o = json::object();
    ObjectWriter in(o);
    fn(in);
    out_[std::string(key)] = std::move(o);
  }

 protected:
  json& out_;
};

// A pair's "subject" ("GPU0-GPU1") is computed, and its "path" carries the link count ("NV18"
// where path_type_name says "NV"): both are written where fields() visits the path.
class PairWriter : public ObjectWriter {
 public:
  PairWriter(json& out, const GpuPair& pair) : ObjectWriter(out), pair_(pair) {}
  using ObjectWriter::operator();
  void operator()(std::string_view key, const PathType&) {
    out_["subject"] = "GPU" + std::to_string(pair_.a) + "-GPU" + std::to_string(pair_.b);
    out_[std::string(key)] = path_label(pair_);
  }

 private:
  const GpuPair& pair_;
};

template <class T>
json to_json(const T& v) {
  if constexpr (std::is_same_v<T, GpuPair>) {
    json o = json::object();
    PairWriter out(o, v);
    fields(out, v);
    return o;
  } else if constexpr (Described<T>) {
    json o = json::object();
    ObjectWriter out(o);
    fields(out, v);
    return o;
  } else if constexpr (kIsOptional<T>) {
    return v ? to_json(*v) : json(nullptr);
  } else if constexpr (std::is_same_v<T, P2PStatus>) {
    return p2p_status_code(v);
  } else if constexpr (std::is_same_v<T, PathType>) {
    return path_type_name(v);
  } else if constexpr (kIsNamedList<T> || kIsMap<T>) {
    // sources[].timings_ms keeps its "slowest first" order: an ordered object.
    json o = json::object();
    for (const auto& [name, value] : v) o[name] = to_json(value);
    return o;
  } else if constexpr (kIsVector<T>) {
    json a = json::array();
    for (const auto& e : v) a.push_back(to_json(e));
    return a;
  } else {
    return json(v);
  }
}

}  // namespace

namespace report {

json facts_document(const Facts& facts, const JsonOptions& options) {
  json doc = {
      {"schema", "gpuvet.report/1"},
      {"tool", {{"name", "gpuvet"}, {"version", GPUVET_VERSION}, {"command", options.command}}},
  };
  ObjectWriter out(doc);
  fields(out, facts);
  return doc;
}

json samples_json(const std::vector<GpuSample>& samples) { return to_json(samples); }
json host_samples_json(const std::vector<HostSample>& samples) { return to_json(samples); }

std::string dump_document(const nlohmann::ordered_json& doc, int indent) {
  // Invalid UTF-8 from a device string must not abort the dump: it becomes U+FFFD.
  std::string dumped = doc.dump(indent, ' ', false, json::error_handler_t::replace);
  if (dumped.find('\x7f') == std::string::npos && dumped.find('\xc2') == std::string::npos)
    return dumped;  // nothing to escape: no second copy of a large document
  // The dump escapes C0 controls but leaves DEL and the C1 controls (U+0080–U+009F, which
  // some terminals obey) raw. Outside strings a JSON text is ASCII, so every such byte is
  // inside a string, where \u escapes mean the same character.
  std::string out;
  out.reserve(dumped.size());
  for (std::size_t i = 0; i < dumped.size(); ++i) {
    const auto ch = static_cast<unsigned char>(dumped[i]);
    const auto next = i + 1 < dumped.size() ? static_cast<unsigned char>(dumped[i + 1]) : 0;
    if (ch == 0x7F) {
      out += "\\u007f";
    } else if (ch == 0xC2 && next >= 0x80 && next <= 0x9F) {
      out += fmt::format("\\u{:04x}", next);
      ++i;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

}  // namespace report

std::string facts_to_json(const Facts& facts, const JsonOptions& options) {
  return report::dump_document(report::facts_document(facts, options), options.indent);
}

}  // namespace gpuvet
