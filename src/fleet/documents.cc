// src/fleet/documents.cc — node reports read for the fleet history: gpuvet's gate, report
// (diagnose, facts) and bench JSON, one or many per file.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "baseline/text_hash.h"
#include "core/small_file.h"
#include "core/util.h"
#include "gpuvet/bench.h"
#include "gpuvet/fleet.h"
#include "gpuvet/import.h"
#include "import/gpuvet_json.h"
#include "import/load.h"

namespace gpuvet {
namespace {

using json =
    nlohmann::ordered_json;  // the key order of the file: gpuvet-json sniffs "schema" first

template <class T>
std::optional<T> get_opt(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if constexpr (std::is_same_v<T, std::string>) {
    if (it->is_string()) return it->get<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (it->is_boolean()) return it->get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (it->is_number_integer()) return it->get<T>();
  } else {
    if (it->is_number() && std::isfinite(it->get<double>())) return it->get<T>();
  }
  return std::nullopt;
}

// The "node" section of a gpuvet.gate/1 document (src/report/gate.cc writes it).
Result<NodePrint> node_from_json(const json& node, const std::string& where) {
  if (!node.is_object()) return Status::invalid_input(fmt::format("{}: no \"node\" object", where));
  NodePrint n;
  n.host = get_opt<std::string>(node, "host");
  n.gpu_model = get_opt<std::string>(node, "gpu_model");
  n.gpu_count = get_opt<int>(node, "gpu_count").value_or(0);
  n.driver_version = get_opt<std::string>(node, "driver_version");
  const auto array = [&](const char* key) -> Result<const json*> {
    const auto it = node.find(key);
    if (it == node.end() || !it->is_array())
      return Status::invalid_input(fmt::format("{}: node.{} is not an array", where, key));
    return &*it;
  };
  auto gpus = array("gpus");
  if (!gpus.is_ok()) return gpus.status();
  for (const auto& g : *gpus.value()) {
    if (!g.is_object() || !get_opt<int>(g, "index"))
      return Status::invalid_input(fmt::format("{}: a node.gpus entry has no index", where));
    GpuPrint p;
    p.index = *get_opt<int>(g, "index");
    p.name = get_opt<std::string>(g, "name");
    p.uuid = get_opt<std::string>(g, "uuid");
    p.pci_bus_id = get_opt<std::string>(g, "pci_bus_id");
    p.pcie_gen_max = get_opt<int>(g, "pcie_gen_max");
    p.pcie_width_max = get_opt<int>(g, "pcie_width_max");
    p.pcie_width = get_opt<int>(g, "pcie_width");
    p.numa_node = get_opt<int>(g, "numa_node");
    p.nvlinks_up = get_opt<int>(g, "nvlinks_up");
    p.fabric = get_opt<std::string>(g, "fabric");
    p.vbios = get_opt<std::string>(g, "vbios");
    p.ecc_enabled = get_opt<bool>(g, "ecc_enabled");
    p.power_limit_w = get_opt<double>(g, "power_limit_w");
    n.gpus.push_back(std::move(p));
  }
  auto pairs = array("pairs");
  if (!pairs.is_ok()) return pairs.status();
  for (const auto& q : *pairs.value()) {
    const auto a = q.is_object() ? get_opt<int>(q, "a") : std::nullopt;
    const auto b = q.is_object() ? get_opt<int>(q, "b") : std::nullopt;
    if (!a || !b)
      return Status::invalid_input(fmt::format("{}: a node.pairs entry has no a/b", where));
    n.pairs.push_back(
        {*a, *b, get_opt<std::string>(q, "path").value_or("?"), get_opt<std::string>(q, "p2p")});
  }
  if (const auto it = node.find("bandwidth"); it != node.end() && it->is_array())
    for (const auto& v : *it) {
      const auto gbps = v.is_object() ? get_opt<double>(v, "gbps") : std::nullopt;
      const auto key = gbps ? get_opt<std::string>(v, "key") : std::nullopt;
      const auto subject = key ? get_opt<std::string>(v, "subject") : std::nullopt;
      if (!subject || *gbps < 0) continue;
      n.bandwidth.push_back({*key, *subject, get_opt<std::uint64_t>(v, "size_bytes"), *gbps});
    }
  if (n.gpu_count != static_cast<int>(n.gpus.size()))
    return Status::invalid_input(fmt::format("{}: node.gpu_count {} but {} node.gpus entries",
                                             where, n.gpu_count, n.gpus.size()));
  return n;
}

std::string utc_day(std::int64_t t) { return format_utc(t, "%Y-%m-%d %H:%M"); }

bool plain_host_name(std::string_view h) {
  if (h.empty() || h.size() > 253 || h.front() == '-') return false;
  for (const char c : h)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
      return false;
  return true;
}

// The faults a document's findings name (gate/1 and report/1 carry the same finding objects):
// at most kMaxFaults, subjects by GPU UUID where the finding lists one.
void read_faults(const json& findings, std::vector<FleetFault>& out) {
  constexpr std::size_t kMaxFaults = 256;
  for (const auto& f : findings) {
    if (!f.is_object() || out.size() >= kMaxFaults) continue;
    const auto key = get_opt<std::string>(f, "fault");
    if (!key || key->empty() || key->size() > 64) continue;
    std::vector<std::string> subjects;
    if (const auto gpus = f.find("gpus"); gpus != f.end() && gpus->is_array())
      for (const auto& g : *gpus)
        if (g.is_object())
          if (auto uuid = get_opt<std::string>(g, "uuid")) subjects.push_back(*uuid);
    if (subjects.empty())
      if (const auto s = f.find("subjects"); s != f.end() && s->is_array())
        for (const auto& v : *s)
          if (v.is_string()) subjects.push_back(v.get<std::string>());
    if (subjects.empty()) subjects.push_back("node");
    for (auto& subject : subjects) {
      if (out.size() >= kMaxFaults) break;
      const auto ack = f.find("acknowledged");
      FleetFault fault{*key, std::move(subject),
                       get_opt<std::string>(f, "severity").value_or("warning"),
                       ack != f.end() && ack->is_object()};
      if (std::find(out.begin(), out.end(), fault) == out.end()) out.push_back(std::move(fault));
    }
  }
}

// What a gate or report document says of the node's health for the fleet's memory: whether it
// judged the node (it has findings), their faults, and when the node booted (collected_unix −
// uptime, to the minute).
void read_judgement(const json& doc, std::optional<double> uptime_s, FleetDocument& d) {
  if (uptime_s && d.collected_unix && *uptime_s >= 0 && *uptime_s < 1e10)
    d.boot_unix = (*d.collected_unix - static_cast<std::int64_t>(*uptime_s)) / 60 * 60;
  const auto findings = doc.find("findings");
  d.judged = findings != doc.end() && findings->is_array();
  if (d.judged) read_faults(*findings, d.faults);
}

// The facts of a gpuvet.report/1 document, as import_text of its text gave them (the
// gpuvet-json importer's part of it: one part, recognised as gpuvet-json), from the parsed
// document.
Facts report_facts(const json& doc, const std::string& where) {
  Facts out;
  Facts one;
  const Status st = import::import_gpuvet_json_document(doc, one);
  import::add_parsed(out, std::move(one), st, ImportedFile{where, "gpuvet-json", {}}, where, where);
  return out;
}

// `content_hash`: text_hash of the document's compact text (the key the store has always
// used), computed while parsing; empty when the parse could not (then the text is written).
Result<FleetDocument> one_document(const json& doc, std::string content_hash,
                                   const DocumentOrigin& origin, const std::string& where) {
  if (!doc.is_object()) return Status::invalid_input(fmt::format("{}: not a JSON object", where));
  FleetDocument d;
  d.schema = get_opt<std::string>(doc, "schema").value_or("");
  d.source = where;
  d.content_hash = content_hash.empty() ? text_hash(doc.dump()) : std::move(content_hash);
  if (d.schema == "gpuvet.gate/1") {
    auto node = node_from_json(doc.contains("node") ? doc["node"] : json(), where);
    if (!node.is_ok()) return node.status();
    d.print = std::move(node).value();
    d.has_print = true;
    d.host = get_opt<std::string>(doc, "host").value_or(d.print.host.value_or(""));
    d.collected_unix = get_opt<std::int64_t>(doc, "collected_unix");
    d.verdict = get_opt<std::string>(doc, "verdict");
    d.reason = get_opt<std::string>(doc, "reason");
    if (const auto b = doc.find("baseline"); b != doc.end() && b->is_object())
      d.baseline = get_opt<std::string>(*b, "name") ? get_opt<std::string>(*b, "name")
                                                    : get_opt<std::string>(*b, "path");
    read_judgement(doc, get_opt<double>(doc, "uptime_s"), d);
    if (d.verdict && *d.verdict != "pass" && *d.verdict != "fail" && *d.verdict != "unknown")
      return Status::invalid_input(
          fmt::format("{}: verdict '{}' is not pass, fail or unknown", where, *d.verdict));
  } else if (d.schema == "gpuvet.report/1") {
    // Facts and diagnoses: the same reader as `diagnose --from` (the gpuvet-json importer),
    // on the document already parsed.
    const Facts facts = report_facts(doc, where);
    if (facts.imported.empty() && facts.gpus.empty())
      return Status::invalid_input(
          fmt::format("{}: a gpuvet.report/1 document gpuvet cannot read", where));
    d.print = node_print(facts);
    d.print.bandwidth = bandwidth_values(facts.measurements);
    d.has_print = true;
    d.host = facts.host.hostname.value_or("");
    d.collected_unix = facts.host.collected_unix;
    read_judgement(doc, facts.host.uptime_s, d);
  } else if (d.schema == "gpuvet.bench/1") {
    auto m = bench_json_measurements(doc.dump(), where);
    if (!m.is_ok()) return m.status();
    d.print.bandwidth = bandwidth_values(m.value());
    d.host = get_opt<std::string>(doc, "host").value_or("");
  } else {
    return Status::invalid_input(fmt::format(
        "{}: schema '{}' is not a node report gpuvet keeps (gpuvet.gate/1 from gate --json, "
        "gpuvet.report/1 from diagnose or facts --json, gpuvet.bench/1 from bench --json)",
        where, d.schema.empty() ? std::string("none") : d.schema));
  }
  if (d.host.empty()) d.host = origin.host_hint;  // bench documents: the file's stem
  if (d.host.empty())
    return Status::invalid_input(fmt::format("{}: no host name in the document", where));
  // The host name ends up in drain commands (scontrol, kubectl) and in line-based pipelines:
  // only a plain host name is kept, never a newline, a space or an option.
  if (!plain_host_name(d.host))
    return Status::invalid_input(fmt::format(
        "{}: host name {} is not a plain host name ([A-Za-z0-9._-], 1 to 253 characters, not "
        "starting with '-'): the document is refused",
        where, json(d.host.substr(0, 80)).dump()));
  d.print.host = d.host;
  if (!d.collected_unix) d.collected_unix = origin.mtime_unix;
  if (d.collected_unix && origin.now_unix && *d.collected_unix > *origin.now_unix + 86400)
    return Status::invalid_input(fmt::format(
        "{}: dated {} UTC, more than a day after this machine's clock ({} UTC): the node's clock "
        "is wrong; the report is refused so that it cannot make the fleet look stale",
        where, utc_day(*d.collected_unix), utc_day(*origin.now_unix)));
  if (d.collected_unix && *d.collected_unix < 946684800)  // 2000-01-01
    return Status::invalid_input(
        fmt::format("{}: dated before 2000 (collected_unix {}): not a report of this fleet", where,
                    *d.collected_unix));
  return d;
}

// A document of a file, parsed, with the content hash of its compact text.
struct ParsedDocument {
  json doc;
  std::string content_hash;  // empty: to be computed from doc.dump() (a duplicate key)
};

// Builds the documents of one JSON text (its top-level value, or each element of a top-level
// array) in one pass, as json::parse would, and hashes each one's compact text (what
// doc.dump() writes) from the same events, so the document is never written out to be hashed.
// Objects are built in a vector of their own and moved into the ordered_json at their end, at
// their final size: ordered_json's object is a vector of pair<const string, json>, which
// copies every member, deeply, each time it grows.
class DocumentBuilder {
 public:
  using string_t = json::string_t;

  explicit DocumentBuilder(bool split_top_array) : split_top_array_(split_top_array) {}

  std::vector<ParsedDocument> take() { return std::move(documents_); }
  bool top_is_array() const { return top_is_array_; }

  bool null() {
    scalar("null");
    return place(json(nullptr));
  }
  bool boolean(bool v) {
    scalar(v ? "true" : "false");
    return place(json(v));
  }
  bool number_integer(json::number_integer_t v) {
    scalar(fmt::format_int(v).str());
    return place(json(v));
  }
  bool number_unsigned(json::number_unsigned_t v) {
    scalar(fmt::format_int(v).str());
    return place(json(v));
  }
  bool number_float(json::number_float_t v, const string_t&) {
    scalar(json(v).dump());  // dump's own float format
    return place(json(v));
  }
  bool string(string_t& v) {
    value_start();
    if (hashing()) add_quoted(v);
    value_end_if_document();
    return place(json(std::move(v)));
  }
  bool binary(json::binary_t&) { return false; }  // not in JSON text
  bool start_object(std::size_t) {
    value_start();
    if (hashing()) hash_.add('{');
    frames_.push_back(Frame{true});
    return true;
  }
  bool key(string_t& k) {
    Frame& f = frames_.back();
    if (hashing()) {
      if (!f.first) hash_.add(',');
      add_quoted(k);
      hash_.add(':');
    }
    f.first = false;
    // A repeated key: the last value is kept at the first one's place, as json::parse does;
    // the hash is then taken from the document's text.
    for (std::size_t i = 0; i < f.members.size(); ++i)
      if (f.members[i].first == k) {
        f.target = i;
        duplicate_ = true;
        return true;
      }
    f.target = f.members.size();
    f.members.emplace_back(std::move(k), json());
    return true;
  }
  bool end_object() {
    Frame f = std::move(frames_.back());
    frames_.pop_back();
    json obj(json::value_t::object);
    auto& members = obj.get_ref<json::object_t&>();
    members.reserve(f.members.size());
    for (auto& [k, v] : f.members) members.emplace_back(std::move(k), std::move(v));
    if (hashing()) hash_.add('}');
    value_end_if_document();
    return place(std::move(obj));
  }
  bool start_array(std::size_t) {
    if (frames_.empty() && split_top_array_) {
      top_is_array_ = true;  // its elements are the documents; it is not one itself
      frames_.push_back(Frame{false});
      return true;
    }
    value_start();
    if (hashing()) hash_.add('[');
    frames_.push_back(Frame{false});
    frames_.back().array = json(json::value_t::array);
    return true;
  }
  bool end_array() {
    Frame f = std::move(frames_.back());
    frames_.pop_back();
    if (frames_.empty() && top_is_array_) return true;
    if (hashing()) hash_.add(']');
    value_end_if_document();
    return place(std::move(f.array));
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }

 private:
  struct Frame {
    bool is_object = false;
    bool first = true;
    json array;  // an array frame's elements
    std::vector<std::pair<std::string, json>> members;
    std::size_t target = 0;
  };

  // The depth at which documents start: 0, or 1 inside a top-level array.
  std::size_t document_depth() const { return top_is_array_ ? 1 : 0; }
  bool hashing() const { return frames_.size() >= document_depth(); }

  // Before a value (scalar or container): a document starts here, or a separator.
  void value_start() {
    if (frames_.size() == document_depth()) {
      hash_ = TextHash();
      duplicate_ = false;
      return;
    }
    if (frames_.size() < document_depth()) return;
    Frame& f = frames_.back();
    if (!f.is_object) {
      if (!f.first) hash_.add(',');
      f.first = false;
    }
  }
  // After a value: a document ends here when it started at this depth.
  void value_end_if_document() {
    if (frames_.size() == document_depth())
      document_hash_ = duplicate_ ? std::string() : hash_.hex();
  }
  void scalar(std::string_view text) {
    value_start();
    if (hashing()) hash_.add(text);
    value_end_if_document();
  }
  // A string as dump() writes it: as it is unless it holds a character dump escapes.
  void add_quoted(const std::string& v) {
    const bool plain = std::none_of(v.begin(), v.end(), [](char c) {
      return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20;
    });
    if (plain) {
      hash_.add('"').add(v).add('"');
    } else {
      hash_.add(json(v).dump());
    }
  }
  bool place(json v) {
    if (frames_.empty()) {
      documents_.push_back({std::move(v), document_hash_});
      return true;
    }
    Frame& f = frames_.back();
    if (f.is_object) {
      f.members[f.target].second = std::move(v);
    } else if (frames_.size() == 1 && top_is_array_) {
      documents_.push_back({std::move(v), document_hash_});
    } else {
      f.array.push_back(std::move(v));
    }
    return true;
  }

  bool split_top_array_;
  bool top_is_array_ = false;
  std::vector<Frame> frames_;
  TextHash hash_;
  bool duplicate_ = false;
  std::string document_hash_;  // of the document that just ended; empty after a repeated key
  std::vector<ParsedDocument> documents_;
};

// The documents of one JSON text; false when it is not one JSON text.
bool parse_documents(std::string_view text, bool split_top_array,
                     std::vector<ParsedDocument>& out) {
  DocumentBuilder builder(split_top_array);
  if (!json::sax_parse(text, &builder, json::input_format_t::json, /*strict=*/true,
                       /*ignore_comments=*/false))
    return false;
  out = builder.take();
  return true;
}

}  // namespace

Result<std::vector<FleetDocument>> fleet_documents(std::string_view text,
                                                   const DocumentOrigin& origin) {
  std::vector<ParsedDocument> docs;
  if (!parse_documents(text, /*split_top_array=*/true, docs)) {
    docs.clear();
    // JSON lines: one document per non-empty line.
    std::size_t start = 0;
    int line = 0;
    while (start < text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      ++line;
      const auto piece = text.substr(start, end - start);
      start = end + 1;
      if (piece.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      std::vector<ParsedDocument> one;
      if (!parse_documents(piece, /*split_top_array=*/false, one)) {
        // Not JSON lines either: say where the document itself stops being JSON.
        try {
          const json ignored = json::parse(text);
          (void)ignored;
        } catch (const json::out_of_range& e) {
          // A number JSON allows and a double does not (1e999): this file only, named.
          return Status::invalid_input(
              fmt::format("{}: a number out of range ({})", origin.path,
                          std::string(e.what()).substr(std::string(e.what()).find(']') + 2)));
        } catch (const json::parse_error& e) {
          if (e.byte >= text.size())
            return Status::invalid_input(fmt::format(
                "{}: not JSON: it ends before the document does (a file cut short, by a node "
                "that died while writing it?)",
                origin.path));
          return Status::invalid_input(
              fmt::format("{}: not JSON (at byte {})", origin.path, e.byte));
        }
        return Status::invalid_input(fmt::format("{}: line {} is not JSON", origin.path, line));
      }
      docs.push_back(std::move(one.front()));
    }
  }
  if (docs.empty()) return Status::invalid_input(fmt::format("{}: no document in it", origin.path));
  std::vector<FleetDocument> out;
  out.reserve(docs.size());
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const std::string where =
        docs.size() == 1 ? origin.path : fmt::format("{}#{}", origin.path, i + 1);
    auto d = one_document(docs[i].doc, std::move(docs[i].content_hash), origin, where);
    if (!d.is_ok()) return d.status();
    out.push_back(std::move(d).value());
  }
  return out;
}

FleetInputs fleet_input_files(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  FleetInputs in;
  for (const auto& path : paths) {
    std::error_code ec;
    const auto st = fs::symlink_status(path, ec);
    if (ec || !fs::exists(st)) {
      in.problems.push_back(fmt::format("{}: no such file or directory", path));
      continue;
    }
    if (!fs::is_directory(st)) {
      in.files.push_back(path);  // named on the command line: read whatever its name
      continue;
    }
    std::vector<std::string> found;
    fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec);
    if (ec) {
      in.problems.push_back(fmt::format("{}: cannot list it ({})", path, ec.message()));
      continue;
    }
    for (const fs::recursive_directory_iterator end; it != end; it.increment(ec)) {
      if (ec) {
        in.problems.push_back(fmt::format("{}: cannot list all of it ({})", path, ec.message()));
        break;
      }
      const auto& e = *it;
      std::error_code ec2;
      if (e.is_regular_file(ec2) && !e.is_symlink(ec2) && e.path().extension() == ".json")
        found.push_back(e.path().string());
    }
    std::sort(found.begin(), found.end());
    in.files.insert(in.files.end(), found.begin(), found.end());
  }
  return in;
}

Result<std::vector<FleetDocument>> read_fleet_file(const std::string& path) {
  auto file = read_fleet_file(path, KnownFleetFiles{});
  if (!file.is_ok()) return file.status();
  return std::move(file.value().documents);
}

Result<FleetFile> read_fleet_file(const std::string& path, const KnownFleetFiles& known) {
  auto text = read_small_file(path, std::size_t{64} << 20, "report file");
  if (!text.is_ok()) return text.status();
  FleetFile file;
  file.byte_hash = fmt::format("{}-{}", text_hash(text.value()), text.value().size());
  if (const auto it = known.find(file.byte_hash); it != known.end()) {
    file.known_documents = it->second;
    return file;
  }
  DocumentOrigin origin;
  origin.path = path;
  origin.host_hint = std::filesystem::path(path).stem().string();
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) origin.mtime_unix = st.st_mtime;
  origin.now_unix = static_cast<std::int64_t>(std::time(nullptr));
  auto docs = fleet_documents(text.value(), origin);
  if (!docs.is_ok()) return docs.status();
  file.documents = std::move(docs).value();
  return file;
}

}  // namespace gpuvet
