#include "import/gpuvet_json.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/facts_fields.h"
#include "core/pair_matrix.h"
#include "core/util.h"

namespace gpuvet::import {
namespace {

// Ordered: sources[].timings_ms is "slowest first" and must keep the order it was written in.
using json = nlohmann::ordered_json;

constexpr std::string_view kSchemaPrefix = "gpuvet.report/";
constexpr std::int64_t kSchemaVersion = 1;
constexpr std::size_t kSniffWindow = 4096;
// A garbled report could otherwise produce one note per value.
constexpr std::size_t kMaxTypeNotes = 100;
// As many time-series samples as the importers keep (import::SampleSeries::kMaxSamples).
constexpr std::size_t kMaxSamples = 1000000;

}  // namespace

std::optional<std::size_t> too_deep_at(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth) return i;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return std::nullopt;
}

namespace {

std::string at(const std::string& path, std::string_view key) {
  std::string s = path;
  if (!s.empty()) s += '.';
  s += key;
  return s;
}

std::string at(const std::string& path, std::size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

// Reads typed values out of the parsed document. Every mismatch becomes one note naming the
// field by its path ("gpus[0].pcie.gen_current: expected a number") and leaves the field as it
// was; nothing here throws on a well-formed json value.
class Reader {
 public:
  void note(const std::string& path, std::string_view what) {
    if (notes_.size() < kMaxTypeNotes) {
      notes_.push_back(path + ": " + std::string(what));
    } else {
      ++suppressed_;
    }
  }

  std::vector<std::string> take_notes() {
    if (suppressed_ > 0)
      notes_.push_back("… and " + std::to_string(suppressed_) + " more fields of the wrong type");
    suppressed_ = 0;
    return std::move(notes_);
  }

  template <typename T>
  std::optional<T> value(const json& v, const std::string& path) {
    if constexpr (std::is_same_v<T, bool>) {
      if (v.is_boolean()) return v.get<bool>();
      note(path, "expected true or false");
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (v.is_string()) return v.get<std::string>();
      note(path, "expected a string");
    } else if constexpr (std::is_floating_point_v<T>) {
      if (v.is_number()) return v.get<double>();
      note(path, "expected a number");
    } else {
      static_assert(std::is_integral_v<T>);
      if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        if (std::in_range<T>(u)) return static_cast<T>(u);
      } else if (v.is_number_integer()) {
        const auto i = v.get<std::int64_t>();
        if (std::in_range<T>(i)) return static_cast<T>(i);
      } else if (v.is_number_float()) {
        // 700.0 for an integer field is fine; 4.5 or 1e300 is not. Below 2^53 the double is
        // exact, so the int64 cast is safe.
        const double d = v.get<double>();
        if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.0e15) {
          const auto i = static_cast<std::int64_t>(d);
          if (std::in_range<T>(i)) return static_cast<T>(i);
        }
      } else {
        note(path, "expected a number");
        return std::nullopt;
      }
      note(path, "expected a whole number in range");
    }
    return std::nullopt;
  }

  // Optional field: absent or null → nullopt.
  template <typename T>
  void opt(const json& obj, std::string_view key, const std::string& path, std::optional<T>& dst) {
    const json* v = member(obj, key);
    if (!v) return;
    dst = value<T>(*v, at(path, key));
  }

  // Plain field: absent or null leaves the default.
  template <typename T>
  void req(const json& obj, std::string_view key, const std::string& path, T& dst) {
    const json* v = member(obj, key);
    if (!v) return;
    if (auto x = value<T>(*v, at(path, key))) dst = std::move(*x);
  }

  // The member `key` when present and not null.
  static const json* member(const json& obj, std::string_view key) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
  }

  // Sub-object `key`: nullptr (with a note on a wrong type) unless it is an object.
  const json* object(const json& obj, std::string_view key, const std::string& path) {
    const json* v = member(obj, key);
    if (!v) return nullptr;
    if (!v->is_object()) {
      note(at(path, key), "expected an object");
      return nullptr;
    }
    return v;
  }

  const json* array(const json& obj, std::string_view key, const std::string& path) {
    const json* v = member(obj, key);
    if (!v) return nullptr;
    if (!v->is_array()) {
      note(at(path, key), "expected an array");
      return nullptr;
    }
    return v;
  }

  // An array of scalars; elements of the wrong type are skipped, each with a note.
  template <typename T>
  void list(const json& obj, std::string_view key, const std::string& path, std::vector<T>& dst) {
    const json* a = array(obj, key, path);
    if (!a) return;
    const std::string here = at(path, key);
    for (std::size_t i = 0; i < a->size(); ++i)
      if (auto x = value<T>((*a)[i], at(here, i))) dst.push_back(std::move(*x));
  }

  // Each element of an array of objects, with its path; non-objects are skipped with a note.
  template <typename Fn>
  void each_object(const json& obj, std::string_view key, const std::string& path, Fn&& fn) {
    const json* a = array(obj, key, path);
    if (!a) return;
    const std::string here = at(path, key);
    for (std::size_t i = 0; i < a->size(); ++i) {
      const json& e = (*a)[i];
      if (!e.is_object()) {
        note(at(here, i), "expected an object");
        continue;
      }
      fn(e, at(here, i));
    }
  }

  // An object used as a map: each member through `fn(key, value, path)`.
  template <typename Fn>
  void each_member(const json& obj, std::string_view key, const std::string& path, Fn&& fn) {
    const json* o = object(obj, key, path);
    if (!o) return;
    const std::string here = at(path, key);
    for (auto it = o->begin(); it != o->end(); ++it) fn(it.key(), it.value(), at(here, it.key()));
  }

  // A CPU list: "0-15,32" as written, or an array of ids.
  void cpu_list(const json& obj, std::string_view key, const std::string& path,
                std::vector<int>& dst) {
    const json* v = member(obj, key);
    if (!v) return;
    if (v->is_array()) {
      list(obj, key, path, dst);
      return;
    }
    if (!v->is_string()) {
      note(at(path, key), "expected a CPU list string");
      return;
    }
    if (auto ids = parse_cpu_list(v->get_ref<const std::string&>())) {
      dst = std::move(*ids);
    } else {
      note(at(path, key), "not a CPU list (\"0-15,32\")");
    }
  }

  void path_type(const json& obj, std::string_view key, const std::string& path, PathType& dst,
                 std::optional<int>& nvlinks) {
    std::optional<std::string> s;
    opt(obj, key, path, s);
    if (!s) return;
    std::optional<int> links;
    if (auto t = path_type_from(*s, links)) {
      dst = *t;
      if (!nvlinks && links) nvlinks = links;
    } else {
      note(at(path, key), "unknown path type \"" + s->substr(0, 40) + "\"");
    }
  }

  void p2p(const json& obj, std::string_view key, const std::string& path,
           std::optional<P2PStatus>& dst) {
    std::optional<std::string> s;
    opt(obj, key, path, s);
    if (!s) return;
    dst = p2p_status_from(*s);
    if (!dst) note(at(path, key), "unknown P2P code \"" + s->substr(0, 40) + "\"");
  }

 private:
  std::vector<std::string> notes_;
  std::size_t suppressed_ = 0;
};

// The most elements read of one list: as many time-series samples as the importers keep, and
// of the other lists what the input holds.
template <class E>
constexpr std::size_t max_elements() {
  return std::is_same_v<E, GpuSample> ? kMaxSamples : std::numeric_limits<std::size_t>::max();
}

template <class T>
void read_object(Reader& r, const json& obj, const std::string& path, T& out);
void read_object(Reader& r, const json& obj, const std::string& path, GpuPair& out);
void read_object(Reader& r, const json& obj, const std::string& path, ProcessFacts& out);
void read_object(Reader& r, const json& obj, const std::string& path, Measurement& out);

// Reads the members of one JSON object into a struct, field by field as fields() lists them.
// Absent or null leaves the field as it is ("not known"); a wrong type is a note (Reader).
class ObjectReader {
 public:
  ObjectReader(Reader& r, const json& obj, std::string path)
      : r_(r), obj_(obj), path_(std::move(path)) {}

  template <class T>
  void operator()(std::string_view key, T& dst) {
    read(key, dst);
  }
  template <class T>
  void operator()(std::string_view key, T& dst, FieldTag) {
    read(key, dst);
  }
  void operator()(std::string_view key, std::vector<int>& ids, IdList) {
    r_.cpu_list(obj_, key, path_, ids);
  }
  void operator()(std::string_view key, std::vector<int>& ids, IdListOrEmpty) {
    r_.cpu_list(obj_, key, path_, ids);
  }
  // Past kPairsListed pairs report/1 writes "pairs" empty and the pairs as "pair_matrix".
  void operator()(std::string_view key, std::vector<GpuPair>& pairs) {
    read(key, pairs);
    const json* m = r_.object(obj_, "pair_matrix", path_);
    if (!m) return;
    const std::string here = at(path_, "pair_matrix");
    PairMatrix matrix;
    r_.list(*m, "gpus", here, matrix.gpus);
    r_.list(*m, "path", here, matrix.path);
    if (const json* p2p = r_.object(*m, "p2p", here))
      for (auto it = p2p->begin(); it != p2p->end(); ++it) {
        std::vector<std::string> rows;
        r_.list(*p2p, it.key(), at(here, "p2p"), rows);
        matrix.p2p.emplace_back(it.key(), std::move(rows));
      }
    std::string problem;
    auto decoded = decode_pair_matrix(matrix, problem);
    if (!problem.empty()) r_.note(here, problem + "; its pairs not read");
    for (auto& p : decoded) pairs.push_back(std::move(p));
  }
  // report/1 writes the Xids beside "kernel_log", as "xids": read from there, with or without
  // a kernel_log object.
  void operator()(std::string_view key, KernelLog& log) {
    read(key, log);
    read("xids", log.xids);
  }
  template <class Fn>
  void nested(std::string_view key, Fn&& fn) {
    if (const json* o = r_.object(obj_, key, path_)) {
      ObjectReader in(r_, *o, at(path_, key));
      fn(in);
    }
  }

 private:
  template <class T>
  void read(std::string_view key, T& dst) {
    if constexpr (Described<T>) {
      if (const json* o = r_.object(obj_, key, path_)) read_object(r_, *o, at(path_, key), dst);
    } else if constexpr (kIsOptional<T>) {
      using U = typename T::value_type;
      if constexpr (Described<U>) {
        if (const json* o = r_.object(obj_, key, path_)) {
          U value;
          read_object(r_, *o, at(path_, key), value);
          dst = std::move(value);
        }
      } else if constexpr (std::is_same_v<U, P2PStatus>) {
        r_.p2p(obj_, key, path_, dst);
      } else {
        r_.opt(obj_, key, path_, dst);
      }
    } else if constexpr (std::is_same_v<T, PathType>) {
      std::optional<int> links;  // a pair's link count is read by read_object(GpuPair)
      r_.path_type(obj_, key, path_, dst, links);
    } else if constexpr (kIsNamedList<T> || kIsMap<T>) {
      using U = typename T::value_type::second_type;
      r_.each_member(obj_, key, path_,
                     [&](const std::string& name, const json& v, const std::string& here) {
                       if (auto x = r_.value<U>(v, here)) {
                         if constexpr (kIsMap<T>) {
                           dst[name] = std::move(*x);
                         } else {
                           dst.emplace_back(name, std::move(*x));
                         }
                       }
                     });
    } else if constexpr (kIsVector<T>) {
      using E = typename T::value_type;
      if constexpr (Described<E>) {
        read_objects(key, dst);
      } else {
        r_.list(obj_, key, path_, dst);
      }
    } else {
      r_.req(obj_, key, path_, dst);
    }
  }

  template <class E>
  void read_objects(std::string_view key, std::vector<E>& dst) {
    constexpr std::size_t kMax = max_elements<E>();
    std::size_t skipped = 0;
    r_.each_object(obj_, key, path_, [&](const json& e, const std::string& here) {
      if (dst.size() >= kMax) {
        ++skipped;
        return;
      }
      E element;
      read_object(r_, e, here, element);
      dst.push_back(std::move(element));
    });
    if (skipped > 0)
      r_.note(at(path_, key), "more than " + std::to_string(kMax) + " " + std::string(key) + "; " +
                                  std::to_string(skipped) + " later ones not read");
  }

  Reader& r_;
  const json& obj_;
  std::string path_;
};

template <class T>
void read_object(Reader& r, const json& obj, const std::string& path, T& out) {
  ObjectReader in(r, obj, path);
  fields(in, out);
}

// "NV18" in "path" carries the link count; it fills nvlinks where that key did not.
void read_object(Reader& r, const json& obj, const std::string& path, GpuPair& out) {
  read_object<GpuPair>(r, obj, path, out);
  const json* p = Reader::member(obj, "path");
  if (out.nvlinks || !p || !p->is_string()) return;
  std::optional<int> links;
  if (path_type_from(p->get_ref<const std::string&>(), links)) out.nvlinks = links;
}

// Reports without the id lists still have the raw lists, in the same "0-15" syntax.
void read_object(Reader& r, const json& obj, const std::string& path, ProcessFacts& out) {
  read_object<ProcessFacts>(r, obj, path, out);
  if (!Reader::member(obj, "cpus_allowed_ids") && out.cpus_allowed)
    if (auto ids = parse_cpu_list(*out.cpus_allowed)) out.cpus_allowed_ids = std::move(*ids);
  if (!Reader::member(obj, "mems_allowed_ids") && out.mems_allowed)
    if (auto ids = parse_cpu_list(*out.mems_allowed)) out.mems_allowed_ids = std::move(*ids);
}

// Reports written before "wrong_data" existed kept nccl-tests' "#wrong N" in the note.
void read_object(Reader& r, const json& obj, const std::string& path, Measurement& out) {
  read_object<Measurement>(r, obj, path, out);
  if (Reader::member(obj, "wrong_data") || !out.note) return;
  const std::size_t at = out.note->find("#wrong ");
  if (at == std::string::npos) return;
  std::size_t end = at + 7;
  while (end < out.note->size() && (*out.note)[end] >= '0' && (*out.note)[end] <= '9') ++end;
  const std::string count = out.note->substr(at + 7, end - at - 7);
  if (const auto n = parse_uint(count); n && *n > 0) out.wrong_data = "#wrong " + count;
}

Status fail(Facts& out, std::string message) {
  out.notes.push_back(message);
  return Status::invalid_input(std::move(message));
}

}  // namespace

int sniff_gpuvet_json(std::string_view text) {
  const std::string_view head = text.substr(0, kSniffWindow);
  std::size_t i = 0;
  if (starts_with(head, "\xEF\xBB\xBF")) i = 3;  // UTF-8 byte order mark
  auto skip_space = [&] {
    while (i < head.size() &&
           (head[i] == ' ' || head[i] == '\t' || head[i] == '\n' || head[i] == '\r'))
      ++i;
  };
  skip_space();
  if (i >= head.size() || head[i] != '{') return 0;
  for (std::size_t pos = head.find("\"schema\"", i); pos != std::string_view::npos;
       pos = head.find("\"schema\"", pos + 1)) {
    i = pos + 8;
    skip_space();
    if (i >= head.size() || head[i] != ':') continue;
    ++i;
    skip_space();
    if (i < head.size() && head[i] == '"' && starts_with(head.substr(i + 1), kSchemaPrefix))
      return 100;
  }
  return 0;
}

namespace {

// The deepest array/object nesting of a parsed document, counted as too_deep_at counts it in
// the text, stopping as soon as it passes `max_depth` (so the recursion is bounded).
int nesting(const json& j, int depth, int max_depth) {
  if (!j.is_structured()) return depth;
  int deepest = depth + 1;
  if (deepest > max_depth) return deepest;
  for (const auto& v : j) {
    deepest = std::max(deepest, nesting(v, depth + 1, max_depth));
    if (deepest > max_depth) break;
  }
  return deepest;
}

// The report once parsed: what both entry points share.
Status read_report(const json& doc, Facts& out) {
  try {
    if (!doc.is_object()) return fail(out, "gpuvet report: the document is not a JSON object");
    const auto schema = doc.find("schema");
    if (schema == doc.end() || !schema->is_string())
      return fail(out, "gpuvet report: no \"schema\" string; not a gpuvet report");
    const std::string& name = schema->get_ref<const std::string&>();
    if (!starts_with(name, kSchemaPrefix))
      return fail(out,
                  "gpuvet report: schema \"" + name.substr(0, 80) + "\" is not a gpuvet report");

    Reader r;
    const auto version = parse_int(std::string_view(name).substr(kSchemaPrefix.size()));
    if (!version || *version < kSchemaVersion) {
      r.note("schema",
             "unrecognised version \"" + name.substr(0, 80) + "\"; read as gpuvet.report/1");
    } else if (*version > kSchemaVersion) {
      r.note("schema", name +
                           " is newer than this gpuvet reads (gpuvet.report/1); the keys "
                           "it knows were read, the others ignored");
    }
    read_object(r, doc, "", out);
    for (auto& n : r.take_notes()) out.notes.push_back(std::move(n));
    return Status::ok();
  } catch (const std::exception& e) {
    // Not expected from a parsed document (types are checked before every get); a guard so
    // that a bug here cannot take the caller down.
    return fail(out, std::string("gpuvet report: could not be read: ") + e.what());
  }
}

}  // namespace

Status import_gpuvet_json(std::string_view text, Facts& out) {
  if (auto pos = too_deep_at(text, kMaxGpuvetJsonDepth))
    return fail(out, "gpuvet report: nested deeper than " + std::to_string(kMaxGpuvetJsonDepth) +
                         " levels at byte " + std::to_string(*pos) + "; not read");
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: …" → the part after
    // the id, which already names line and column.
    if (auto close = what.find("] "); close != std::string::npos) what = what.substr(close + 2);
    return fail(out,
                "gpuvet report: not valid JSON (byte " + std::to_string(e.byte) + "): " + what);
  } catch (const std::exception& e) {
    return fail(out, std::string("gpuvet report: could not be read: ") + e.what());
  }
  return read_report(doc, out);
}

Status import_gpuvet_json_document(const nlohmann::ordered_json& doc, Facts& out) {
  if (nesting(doc, 0, kMaxGpuvetJsonDepth) > kMaxGpuvetJsonDepth)
    return fail(out, "gpuvet report: nested deeper than " + std::to_string(kMaxGpuvetJsonDepth) +
                         " levels; not read");
  return read_report(doc, out);
}

}  // namespace gpuvet::import
