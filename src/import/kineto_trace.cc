#include "import/kineto_trace.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <zlib.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/stats.h"
#include "core/text_scan.h"
#include "core/util.h"
#include "import/importer.h"
#include "import/job_timeline.h"

namespace gpuvet::import {
namespace {

using json = nlohmann::json;
using text_scan::contains;

// Where the SAX reader is in the document. Only these places are read; everything else
// (deeper arrays, other top-level keys) is skipped by depth.
enum class Ctx : std::uint8_t {
  kRoot,     // the top-level object
  kEvents,   // "traceEvents": [...]
  kEvent,    // one event object
  kArgs,     // its "args"
  kDist,     // "distributedInfo": {...}
  kDevices,  // "deviceProperties": [...]
  kDevice,   // one device object
  kSkip,     // anything else
};

// The keys read, as one enum so a value is dispatched without string compares.
enum class Key : std::uint8_t {
  kOther,
  kTraceEvents,
  kDistributedInfo,
  kDeviceProperties,
  kPh,
  kCat,
  kName,
  kTs,
  kDur,
  kPid,
  kArgs,
  kDevice,
  kCollectiveName,
  kInNelems,
  kDtype,
  kRank,
  kWorldSize,
  kBackend,
  kNcclVersion,
  kId,
};

Key key_of(Ctx parent, const std::string& k) {
  switch (parent) {
    case Ctx::kRoot:
      if (k == "traceEvents") return Key::kTraceEvents;
      if (k == "distributedInfo") return Key::kDistributedInfo;
      if (k == "deviceProperties") return Key::kDeviceProperties;
      return Key::kOther;
    case Ctx::kEvent:
      if (k == "ph") return Key::kPh;
      if (k == "cat") return Key::kCat;
      if (k == "name") return Key::kName;
      if (k == "ts") return Key::kTs;
      if (k == "dur") return Key::kDur;
      if (k == "pid") return Key::kPid;
      if (k == "args") return Key::kArgs;
      return Key::kOther;
    case Ctx::kArgs:
      if (k == "device") return Key::kDevice;
      if (k == "Collective name") return Key::kCollectiveName;
      if (k == "In msg nelems") return Key::kInNelems;
      if (k == "dtype") return Key::kDtype;
      return Key::kOther;
    case Ctx::kDist:
      if (k == "rank") return Key::kRank;
      if (k == "world_size") return Key::kWorldSize;
      if (k == "backend") return Key::kBackend;
      if (k == "nccl_version") return Key::kNcclVersion;
      return Key::kOther;
    case Ctx::kDevice:
      if (k == "id") return Key::kId;
      if (k == "name") return Key::kName;
      return Key::kOther;
    default:
      return Key::kOther;
  }
}

// The event categories that matter, from Kineto's names (lower case since PyTorch 1.10,
// capitalised before: "Kernel", "Memcpy", "Runtime", "Operator").
enum class Cat : std::uint8_t { kOther, kKernel, kCopy, kRuntime, kHostOp };

Cat cat_of(std::string_view c) {
  auto is = [&](std::string_view a) {
    if (c.size() != a.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(c[i])) != a[i]) return false;
    return true;
  };
  if (is("kernel")) return Cat::kKernel;
  if (is("gpu_memcpy") || is("gpu_memset") || is("memcpy") || is("memset")) return Cat::kCopy;
  if (is("cuda_runtime") || is("cuda_driver") || is("runtime") || is("driver"))
    return Cat::kRuntime;
  if (is("cpu_op") || is("user_annotation") || is("operator") || is("python_function"))
    return Cat::kHostOp;
  return Cat::kOther;
}

// ASCII case-insensitive search (no locale: a kernel name is ASCII, and this runs per kernel).
bool icontains(std::string_view hay, std::string_view lower_needle) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c | 0x20) : c; };
  if (lower_needle.empty() || hay.size() < lower_needle.size()) return false;
  for (std::size_t i = 0; i + lower_needle.size() <= hay.size(); ++i) {
    if (lower(hay[i]) != lower_needle[0]) continue;
    std::size_t j = 1;
    while (j < lower_needle.size() && lower(hay[i + j]) == lower_needle[j]) ++j;
    if (j == lower_needle.size()) return true;
  }
  return false;
}

// An NCCL kernel's collective, from its name ("ncclDevKernel_AllReduce_Sum_f32_RING_LL",
// "ncclKernel_AllGather_RING_LL_Sum_int8_t"); "SendRecv" for point-to-point.
std::string nccl_op(std::string_view name) {
  static constexpr std::string_view kOps[] = {"AllReduce", "AllGather", "ReduceScatter",
                                              "Broadcast", "SendRecv",  "Send",
                                              "Recv",      "Reduce",    "AllToAll"};
  for (auto op : kOps)
    if (contains(name, op)) return std::string(op);
  return "nccl (other)";
}

// A host collective's op from PyTorch's names: "gloo:all_reduce", "record_param_comms"'s
// "Collective name" ("allreduce", "_allgather_base").
std::string op_key(std::string_view name) {
  std::string k;
  for (char c : name)
    if (std::isalnum(static_cast<unsigned char>(c)))
      k.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (starts_with(k, "gloo")) k = k.substr(4);
  if (starts_with(k, "nccl")) k = k.substr(4);
  static constexpr std::pair<std::string_view, std::string_view> kNames[] = {
      {"allreduce", "AllReduce"}, {"allgather", "AllGather"}, {"reducescatter", "ReduceScatter"},
      {"broadcast", "Broadcast"}, {"alltoall", "AllToAll"},   {"barrier", "Barrier"},
      {"send", "Send"},           {"recv", "Recv"},           {"reduce", "Reduce"},
      {"gather", "Gather"},       {"scatter", "Scatter"}};
  for (auto [prefix, op] : kNames)
    if (starts_with(k, prefix)) return std::string(op);
  return k.empty() ? "other" : k;
}

int dtype_bytes(std::string_view dtype) {
  const std::string d = to_lower(dtype);
  if (d == "double" || d == "long" || d == "int64" || d == "float64" || d == "complexfloat")
    return 8;
  if (d == "float" || d == "int" || d == "float32" || d == "int32") return 4;
  if (d == "half" || d == "bfloat16" || d == "short" || d == "float16") return 2;
  if (d == "byte" || d == "char" || d == "bool" || d == "int8" || d == "uint8") return 1;
  return 0;
}

bool is_launch(std::string_view n) {
  return n == "cudaLaunchKernel" || n == "cudaLaunchKernelExC" || n == "cuLaunchKernel" ||
         n == "cuLaunchKernelEx" || n == "cudaLaunchCooperativeKernel" ||
         n == "cudaLaunchCooperativeKernelMultiDevice" || n == "cudaGraphLaunch";
}

bool is_sync_call(std::string_view n) {
  return n == "cudaStreamSynchronize" || n == "cudaDeviceSynchronize" ||
         n == "cudaEventSynchronize" || n == "cudaMemcpy" || n == "cuStreamSynchronize" ||
         n == "cuCtxSynchronize" || n == "cuEventSynchronize" || n == "cuMemcpyDtoH_v2";
}

// One event while it is read; committed at its closing brace.
struct Event {
  std::string ph, cat, name, collective, dtype;
  double ts = NAN, dur = NAN;
  std::optional<std::int64_t> pid, device, nelems;
  void clear() {
    ph.clear();
    cat.clear();
    name.clear();
    collective.clear();
    dtype.clear();
    ts = dur = NAN;
    pid.reset();
    device.reset();
    nelems.reset();
  }
};

struct DeviceSpan {
  GpuSpan span;
  std::int64_t device = 0;
};

class Reader final : public json::json_sax_t {
 public:
  // What the trace said, gathered.
  std::vector<DeviceSpan> gpu;
  std::vector<HostSpan> host;
  std::vector<float> kernel_us;
  std::vector<float> launch_us;
  std::map<std::string, std::vector<float>> comm_kernel_us;  // NCCL kernels by op
  std::map<std::string, std::vector<float>> host_coll_us;    // gloo ops by op
  std::map<std::string, std::vector<double>> coll_bytes;     // record_param_comms sizes by op
  std::map<std::int64_t, std::string> device_names;
  std::int64_t events = 0, kept_spans = 0, bad_times = 0, pageable = 0;
  double pageable_us = 0;
  double first_ts = INFINITY, last_end = -INFINITY;
  std::optional<std::int64_t> host_pid;
  JobRank who;
  bool cut = false;
  std::size_t error_at = 0;
  bool saw_events_array = false;

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t v) override { return number(static_cast<double>(v), v); }
  bool number_unsigned(number_unsigned_t v) override {
    return number(static_cast<double>(v), v > static_cast<number_unsigned_t>(INT64_MAX)
                                              ? std::optional<std::int64_t>{}
                                              : static_cast<std::int64_t>(v));
  }
  bool number_float(number_float_t v, const string_t&) override { return number(v, {}); }
  bool string(string_t& v) override {
    switch (ctx()) {
      case Ctx::kEvent:
        switch (key_) {
          case Key::kPh:
            ev_.ph = std::move(v);
            break;
          case Key::kCat:
            ev_.cat = std::move(v);
            break;
          case Key::kName:
            ev_.name = std::move(v);
            break;
          case Key::kTs:
            ev_.ts = parse_double(v).value_or(NAN);
            break;  // some writers quote it
          case Key::kDur:
            ev_.dur = parse_double(v).value_or(NAN);
            break;
          default:
            break;
        }
        break;
      case Ctx::kArgs:
        if (key_ == Key::kCollectiveName) ev_.collective = std::move(v);
        if (key_ == Key::kDtype) ev_.dtype = std::move(v);
        break;
      case Ctx::kDist:
        if (key_ == Key::kBackend) who.backend = text_scan::printable(v, 32);
        if (key_ == Key::kNcclVersion) who.nccl_version = text_scan::printable(v, 32);
        if (key_ == Key::kRank || key_ == Key::kWorldSize) {
          const auto i = parse_int(v);
          if (i) number(static_cast<double>(*i), i);  // some writers quote the numbers
        }
        break;
      case Ctx::kDevice:
        if (key_ == Key::kName) device_name_ = text_scan::printable(v, 80);
        break;
      default:
        break;
    }
    return scalar();
  }
  bool binary(binary_t&) override { return scalar(); }
  bool key(string_t& k) override {
    key_ = stack_.empty() ? Key::kOther : key_of(ctx(), k);
    return true;
  }
  bool start_object(std::size_t) override {
    Ctx next = Ctx::kSkip;
    if (stack_.empty())
      next = Ctx::kRoot;
    else if (ctx() == Ctx::kEvents)
      next = Ctx::kEvent;
    else if (ctx() == Ctx::kEvent && key_ == Key::kArgs)
      next = Ctx::kArgs;
    else if (ctx() == Ctx::kRoot && key_ == Key::kDistributedInfo)
      next = Ctx::kDist;
    else if (ctx() == Ctx::kDevices)
      next = Ctx::kDevice;
    if (next == Ctx::kEvent) ev_.clear();
    if (next == Ctx::kDevice) {
      device_id_.reset();
      device_name_.clear();
    }
    stack_.push_back(next);
    key_ = Key::kOther;
    return true;
  }
  bool end_object() override {
    const Ctx done = stack_.empty() ? Ctx::kSkip : stack_.back();
    if (!stack_.empty()) stack_.pop_back();
    if (done == Ctx::kEvent) commit();
    if (done == Ctx::kDevice && device_id_ && !device_name_.empty())
      device_names[*device_id_] = device_name_;
    key_ = Key::kOther;
    return true;
  }
  bool start_array(std::size_t) override {
    Ctx next = Ctx::kSkip;
    if (!stack_.empty() && ctx() == Ctx::kRoot && key_ == Key::kTraceEvents) {
      next = Ctx::kEvents;
      saw_events_array = true;
    } else if (!stack_.empty() && ctx() == Ctx::kRoot && key_ == Key::kDeviceProperties) {
      next = Ctx::kDevices;
    }
    stack_.push_back(next);
    return true;
  }
  bool end_array() override {
    if (!stack_.empty()) stack_.pop_back();
    key_ = Key::kOther;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception&) override {
    error_at = position;
    return false;
  }

 private:
  std::vector<Ctx> stack_;
  Key key_ = Key::kOther;
  Event ev_;
  std::optional<std::int64_t> device_id_;
  std::string device_name_;

  Ctx ctx() const { return stack_.empty() ? Ctx::kSkip : stack_.back(); }

  bool scalar() {
    key_ = Key::kOther;
    return true;
  }

  bool number(double v, std::optional<std::int64_t> i) {
    switch (ctx()) {
      case Ctx::kEvent:
        if (key_ == Key::kTs) ev_.ts = v;
        if (key_ == Key::kDur) ev_.dur = v;
        if (key_ == Key::kPid) ev_.pid = i;
        break;
      case Ctx::kArgs:
        if (key_ == Key::kDevice) ev_.device = i;
        if (key_ == Key::kInNelems) ev_.nelems = i;
        break;
      case Ctx::kDist:
        if (i && *i >= 0 && *i < (1 << 30)) {
          if (key_ == Key::kRank) who.rank = static_cast<int>(*i);
          if (key_ == Key::kWorldSize) who.world_size = static_cast<int>(*i);
        }
        break;
      case Ctx::kDevice:
        if (key_ == Key::kId) device_id_ = i;
        break;
      default:
        break;
    }
    return scalar();
  }

  bool keep(std::size_t more = 1) {
    if (static_cast<std::size_t>(kept_spans) + more > kMaxTraceSpans) {
      cut = true;
      return false;
    }
    kept_spans += static_cast<std::int64_t>(more);
    return true;
  }

  void commit() {
    ++events;
    if (ev_.ph != "X") return;  // complete events only: flows, metadata, instants carry no span
    const Cat cat = cat_of(ev_.cat);
    if (cat == Cat::kOther) return;
    if (!std::isfinite(ev_.ts) || !std::isfinite(ev_.dur) || ev_.dur < 0) {
      ++bad_times;
      return;
    }
    const double start = ev_.ts, end = ev_.ts + ev_.dur;
    first_ts = std::min(first_ts, start);
    last_end = std::max(last_end, end);
    switch (cat) {
      case Cat::kKernel: {
        const bool comm = icontains(ev_.name, "nccl");
        if (!keep()) return;
        gpu.push_back({{start, end, comm ? GpuWork::kComm : GpuWork::kCompute},
                       ev_.device.value_or(ev_.pid.value_or(0))});
        kernel_us.push_back(static_cast<float>(ev_.dur));
        if (comm) comm_kernel_us[nccl_op(ev_.name)].push_back(static_cast<float>(ev_.dur));
        break;
      }
      case Cat::kCopy:
        if (!keep()) return;
        gpu.push_back({{start, end, GpuWork::kCopy}, ev_.device.value_or(ev_.pid.value_or(0))});
        if (contains(ev_.name, "Pageable")) {
          ++pageable;
          pageable_us += ev_.dur;
        }
        break;
      case Cat::kRuntime:
        if (is_launch(ev_.name)) {
          launch_us.push_back(static_cast<float>(ev_.dur));
          if (!keep()) return;
          host.push_back({start, end, HostWork::kLaunch, 0});
        } else if (is_sync_call(ev_.name)) {
          if (!keep()) return;
          host.push_back({start, end, HostWork::kSync, 0});
        }
        break;
      case Cat::kHostOp:
        host_op(start, end);
        break;
      case Cat::kOther:
        break;
    }
  }

  void host_op(double start, double end) {
    const std::string_view n = ev_.name;
    if (!host_pid && ev_.pid) host_pid = ev_.pid;
    if (starts_with(n, "ProfilerStep#")) {
      auto number = parse_int(n.substr(13));
      if (number && keep()) host.push_back({start, end, HostWork::kStep, *number});
    } else if (contains(n, "DataLoader")) {
      if (keep()) host.push_back({start, end, HostWork::kDataLoader, 0});
    } else if (n == "aten::item" || n == "aten::_local_scalar_dense") {
      if (keep()) host.push_back({start, end, HostWork::kSync, 0});
    } else if (starts_with(n, "gloo:")) {
      if (keep()) host.push_back({start, end, HostWork::kCollective, 0});
      host_coll_us["gloo:" + op_key(n)].push_back(static_cast<float>(end - start));
    } else if (n == "record_param_comms" && !ev_.collective.empty() && ev_.nelems) {
      if (const int b = dtype_bytes(ev_.dtype); b > 0 && *ev_.nelems >= 0)
        coll_bytes[op_key(ev_.collective)].push_back(static_cast<double>(*ev_.nelems) * b);
    }
  }
};

std::optional<double> median_of(const std::vector<float>& v) {
  return median(std::vector<double>(v.begin(), v.end()));
}

// The collectives of the trace: NCCL kernels by op (with the median size PyTorch recorded for
// that op, when it did), gloo's host ops by op.
std::vector<JobCollective> collectives_of(const Reader& r) {
  std::vector<JobCollective> out;
  auto add = [&](const std::string& op, const std::vector<float>& us, const std::string& size_op) {
    JobCollective c;
    c.op = op;
    c.count = static_cast<std::int64_t>(us.size());
    c.median_us = median_of(us);
    if (auto it = r.coll_bytes.find(size_op); it != r.coll_bytes.end()) {
      // A size past uint64 (a garbage element count times the dtype's size) stays unknown:
      // converting it would be undefined.
      if (auto m = median(it->second); m && *m < 0x1p64)
        c.size_bytes = static_cast<std::uint64_t>(*m);
    }
    out.push_back(std::move(c));
  };
  for (const auto& [op, us] : r.comm_kernel_us) add(op, us, op);
  for (const auto& [op, us] : r.host_coll_us) add(op, us, op.substr(5));
  return out;
}

}  // namespace

int sniff_kineto_trace(std::string_view text) {
  const std::string_view head = sniff_head(text).substr(0, 256 << 10);
  std::size_t i = 0;
  while (i < head.size() && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
  if (i >= head.size() || head[i] != '{') return 0;
  if (!contains(head, "\"traceEvents\"")) return 0;
  if (contains(head, "\"schemaVersion\"") || contains(head, "\"distributedInfo\"") ||
      contains(head, "\"deviceProperties\"") || contains(head, "ProfilerStep#"))
    return 95;
  return contains(head, "\"ph\"") ? 70 : 0;
}

namespace {

// A file read in chunks through zlib (gzip or plain alike), as the input iterator the JSON
// reader pulls bytes from: memory holds one chunk, never the file.
class ChunkSource {
 public:
  ChunkSource(const std::string& path, std::size_t max_bytes) : max_(max_bytes) {
    file_ = gzopen(path.c_str(), "rb");
    if (file_) gzbuffer(file_, 1u << 20);
    buf_.resize(1u << 20);
  }
  ~ChunkSource() {
    if (file_) gzclose(file_);
  }
  ChunkSource(const ChunkSource&) = delete;
  ChunkSource& operator=(const ChunkSource&) = delete;
  bool opened() const { return file_ != nullptr; }
  // The next chunk; false at the end, on an error or past max_bytes (each said by why()).
  bool next(const char*& begin, const char*& end) {
    if (!file_ || done_) return false;
    if (total_ >= max_) {
      why_ = fmt::format("more than {} MiB once inflated: the rest was not read", max_ >> 20);
      done_ = true;
      return false;
    }
    const int n = gzread(file_, buf_.data(), static_cast<unsigned>(buf_.size()));
    if (n <= 0) {
      int err = Z_OK;
      const char* msg = gzerror(file_, &err);
      if (n < 0 || (err != Z_OK && err != Z_STREAM_END))
        why_ = std::string("the file could not be read to its end: ") + (msg ? msg : "read error");
      done_ = true;
      return false;
    }
    total_ += static_cast<std::size_t>(n);
    begin = buf_.data();
    end = begin + n;
    return true;
  }
  std::size_t total() const { return total_; }
  const std::string& why() const { return why_; }

 private:
  gzFile file_ = nullptr;
  std::vector<char> buf_;
  std::size_t max_, total_ = 0;
  bool done_ = false;
  std::string why_;
};

class ChunkIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;
  ChunkIterator() = default;  // the end
  explicit ChunkIterator(ChunkSource* src) : src_(src) { pull(); }
  reference operator*() const { return *p_; }
  ChunkIterator& operator++() {
    if (++p_ == e_) pull();
    return *this;
  }
  bool operator==(const ChunkIterator& o) const {
    return src_ == o.src_ && (src_ == nullptr || p_ == o.p_);
  }
  bool operator!=(const ChunkIterator& o) const { return !(*this == o); }

 private:
  void pull() {
    if (!src_ || !src_->next(p_, e_)) src_ = nullptr;
  }
  ChunkSource* src_ = nullptr;
  const char* p_ = nullptr;
  const char* e_ = nullptr;
};

Status finish(Reader& r, bool complete, std::size_t size, Facts& out);

}  // namespace

Status parse_kineto_trace(std::string_view text, Facts& out) {
  Reader r;
  const bool complete = json::sax_parse(text.begin(), text.end(), &r, json::input_format_t::json,
                                        /*strict=*/false);
  return finish(r, complete, text.size(), out);
}

Status parse_kineto_trace_file(const std::string& path, std::size_t max_bytes, Facts& out) {
  ChunkSource src(path, max_bytes);
  if (!src.opened()) return Status::invalid_input(path + ": cannot open");
  Reader r;
  const bool complete = json::sax_parse(ChunkIterator(&src), ChunkIterator(), &r,
                                        json::input_format_t::json, /*strict=*/false);
  if (!src.why().empty()) {
    out.input_problems.push_back(path + ": " + src.why());
    r.error_at = src.total();
  }
  return finish(r, complete && src.why().empty(), src.total(), out);
}

namespace {

Status finish(Reader& r, bool complete, std::size_t size, Facts& out) {
  JobRank rank = std::move(r.who);
  rank.source = "pytorch-trace";
  auto& notes = rank.notes;
  if (!complete) {
    notes.push_back(
        fmt::format("the trace is cut or malformed at byte {} of {}: the {} events "
                    "before it were read",
                    r.error_at, size, r.events));
    // The figures of the steps read stand, but the job is not all there: an input problem.
    out.input_problems.push_back(fmt::format(
        "a profiler trace is cut or malformed at byte {} of {} (rank {}): only its first {} "
        "events were read",
        r.error_at, size, rank.rank ? std::to_string(*rank.rank) : "?", r.events));
  }
  if (!r.saw_events_array || r.events == 0)
    return Status::invalid_input(
        complete ? "a Chrome trace without events (no \"traceEvents\" entries)"
                 : fmt::format("not a readable trace (JSON error at byte {})", r.error_at));
  if (r.cut)
    notes.push_back(
        fmt::format("more than {} GPU and host spans: the rest of the trace was not "
                    "kept",
                    kMaxTraceSpans));
  if (r.bad_times > 0)
    notes.push_back(
        fmt::format("{} event(s) with a missing, non-finite or negative time were "
                    "left out",
                    r.bad_times));
  rank.events = r.events;
  if (r.host_pid && *r.host_pid > 0 && *r.host_pid < (std::int64_t{1} << 31))
    rank.pid = static_cast<int>(*r.host_pid);

  // One GPU per rank: the device with the most spans (a second one is said).
  std::map<std::int64_t, std::size_t> per_device;
  for (const auto& g : r.gpu) ++per_device[g.device];
  Timeline timeline;
  timeline.host = std::move(r.host);
  if (!per_device.empty()) {
    auto busiest = std::max_element(per_device.begin(), per_device.end(),
                                    [](auto& a, auto& b) { return a.second < b.second; });
    const std::int64_t dev = busiest->first;
    if (per_device.size() > 1)
      notes.push_back(
          fmt::format("kernels on {} devices: the figures are of device {}, the "
                      "busiest",
                      per_device.size(), dev));
    if (dev >= 0 && dev < 1024) rank.cuda_device = static_cast<int>(dev);
    if (auto it = r.device_names.find(dev); it != r.device_names.end()) rank.gpu_name = it->second;
    timeline.gpu.reserve(busiest->second);
    for (const auto& g : r.gpu)
      if (g.device == dev) timeline.gpu.push_back(g.span);
  }
  rank.kernels = static_cast<std::int64_t>(r.kernel_us.size());
  rank.median_kernel_us = median_of(r.kernel_us);
  rank.launch_call_us = median_of(r.launch_us);
  if (r.pageable > 0) {
    rank.pageable_copies = r.pageable;
    rank.pageable_copy_ms = r.pageable_us / 1000.0;
  }
  rank.collectives = collectives_of(r);

  // Without ProfilerStep spans (profiled without a schedule), the whole trace is one window.
  const bool has_steps = std::any_of(timeline.host.begin(), timeline.host.end(),
                                     [](const HostSpan& h) { return h.work == HostWork::kStep; });
  if (!has_steps && std::isfinite(r.first_ts) && r.last_end > r.first_ts) {
    timeline.host.push_back({r.first_ts, r.last_end, HostWork::kStep, 0});
    notes.push_back(
        "no ProfilerStep#N span: the whole trace is read as one step (profile with "
        "a schedule and call prof.step() for per-step figures)");
  }
  rank.steps = split_steps(timeline, !timeline.gpu.empty(), kMaxJobSteps, notes);
  out.job_ranks.push_back(std::move(rank));
  return Status::ok();
}

}  // namespace

}  // namespace gpuvet::import
