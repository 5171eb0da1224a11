// Every member of every Facts struct survives the JSON writer, the JSON reader and the merge.
//
// The Facts used here are made by a visitor over fields() (Fill), so a new field is filled,
// written, read, merged and compared with no change to this file. What fields() itself could
// forget is caught by counting: each struct's members (by aggregate initialisation) against
// the fields its fields() lists.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "core/facts_fields.h"
#include "gpuvet/report.h"
#include "import/gpuvet_json.h"
#include "import/load.h"

namespace gpuvet::import {
namespace {

// ------------------------------------------------------------------ member counts

// Converts to any member type; only named in unevaluated operands.
struct AnyMember {
  template <class T>
  operator T() const;
};

template <class T, std::size_t... I>
constexpr bool initialisable_with(std::index_sequence<I...>) {
  return requires { T{(void(I), AnyMember{})...}; };
}

// How many members an aggregate has: the most initialisers T{…} takes.
template <class T, std::size_t N = 0>
constexpr std::size_t member_count() {
  if constexpr (initialisable_with<T>(std::make_index_sequence<N + 1>{})) {
    return member_count<T, N + 1>();
  } else {
    return N;
  }
}

// The counter itself, on members of the kinds facts.h uses (a nested aggregate, an enum,
// optionals, lists and maps).
struct CounterCheck {
  int id = 0;
  std::optional<std::string> name;
  PcieLink link;
  PathType path = PathType::kUnknown;
  std::vector<NvLink> links;
  std::map<std::string, std::uint64_t> counts;
  std::optional<HostPressure> pressure;
};
static_assert(member_count<CounterCheck>() == 7);
static_assert(member_count<EccCounts>() == 2);

// Counts the fields one fields() lists (a nested group's count as the struct's own).
struct FieldCount {
  std::size_t n = 0;
  template <class... A>
  void operator()(A&&...) {
    ++n;
  }
  template <class Fn>
  void nested(std::string_view, Fn&& fn) {
    fn(*this);
  }
};

template <class T>
struct Element {
  using type = T;
};
template <class T>
struct Element<std::optional<T>> {
  using type = T;
};
template <class T>
struct Element<std::vector<T>> {
  using type = T;
};

// Walks every struct reachable from Facts and compares member and field counts.
struct CountEveryStruct {
  std::set<std::string> seen;
  std::vector<std::string> problems;

  template <class T>
  void check(const std::string& where) {
    if (!seen.insert(typeid(T).name()).second) return;
    T t{};
    FieldCount count;
    fields(count, t);
    if (count.n != member_count<T>())
      problems.push_back(where + " (" + typeid(T).name() +
                         "): " + std::to_string(member_count<T>()) + " members, fields() lists " +
                         std::to_string(count.n));
    Walk walk{*this, where};
    fields(walk, t);
  }

  struct Walk {
    CountEveryStruct& all;
    std::string where;
    template <class F, class... Tag>
    void operator()(std::string_view key, F&, Tag...) {
      using E = typename Element<F>::type;
      if constexpr (Described<E>) all.check<E>(where + "." + std::string(key));
    }
    template <class Fn>
    void nested(std::string_view key, Fn&& fn) {
      Walk in{all, where + "." + std::string(key)};
      fn(in);
    }
  };
};

TEST(FactsFields, EveryMemberOfEveryStructIsListed) {
  CountEveryStruct all;
  all.check<Facts>("Facts");
  EXPECT_GE(all.seen.size(), 30u);  // every struct of facts.h is reached
  for (const auto& p : all.problems) ADD_FAILURE() << p;
}

// ------------------------------------------------------------------ fully populated facts

// Sets every field to a value of its own: optionals engaged, lists of two, maps of two, and
// numbers that differ from field to field and from one seed to the next (a seed's numbers
// stay below the next seed's). Id lists are sorted and unique, as "0-15" text gives them back,
// and below the largest CPU id parse_cpu_list takes.
class Fill {
 public:
  explicit Fill(int seed) : seed_(seed), n_(seed * 10000) {}

  template <class T, class... Tag>
  void operator()(std::string_view, T& v, Tag...) {
    set(v);
  }
  template <class Fn>
  void nested(std::string_view, Fn&& fn) {
    fn(*this);
  }
  template <class T>
  T make() {
    T v{};
    set(v);
    return v;
  }

 private:
  template <class T>
  void set(T& v) {
    const int n = ++n_;
    if constexpr (Described<T>) {
      fields(*this, v);
    } else if constexpr (kIsOptional<T>) {
      v = make<typename T::value_type>();
    } else if constexpr (kIsMap<T> || kIsNamedList<T>) {
      using U = std::remove_const_t<typename T::value_type::second_type>;
      // Out of key order: a named list keeps the order it was given.
      const std::string second = "b" + std::to_string(n);
      const std::string first = "a" + std::to_string(n);
      if constexpr (kIsMap<T>) {
        v.emplace(second, make<U>());
        v.emplace(first, make<U>());
      } else {
        v.emplace_back(second, make<U>());
        v.emplace_back(first, make<U>());
      }
    } else if constexpr (std::is_same_v<T, std::vector<int>>) {
      v = {n, n + 1, n + 3};
    } else if constexpr (kIsVector<T>) {
      v.push_back(make<typename T::value_type>());
      v.push_back(make<typename T::value_type>());
    } else if constexpr (std::is_same_v<T, bool>) {
      v = seed_ % 2 == 1;
    } else if constexpr (std::is_same_v<T, std::string>) {
      v = "text-" + std::to_string(n);
    } else if constexpr (std::is_same_v<T, PathType>) {
      v = seed_ % 2 == 1 ? PathType::kNVLink : PathType::kPXB;
    } else if constexpr (std::is_same_v<T, P2PStatus>) {
      constexpr P2PStatus kAll[] = {P2PStatus::kChipsetNotSupported,
                                    P2PStatus::kGpuNotSupported,
                                    P2PStatus::kTopologyNotSupported,
                                    P2PStatus::kDisabledByRegkey,
                                    P2PStatus::kNotSupported,
                                    P2PStatus::kUnknown,
                                    P2PStatus::kOk};
      v = kAll[n % 7];
    } else if constexpr (std::is_floating_point_v<T>) {
      v = n + 0.25;
    } else if constexpr (std::is_same_v<T, std::uint64_t>) {
      v = (std::uint64_t{1} << 40) + static_cast<std::uint64_t>(n);
    } else if constexpr (std::is_same_v<T, std::int64_t>) {
      v = (std::int64_t{1} << 36) + n;
    } else {
      static_assert(std::is_integral_v<T>, "Fill: a field of a new kind; give it a value");
      v = static_cast<T>(n);
    }
  }

  int seed_;
  int n_;
};

Facts full(int seed) { return Fill(seed).make<Facts>(); }

// ------------------------------------------------------------------ comparison

template <class T>
std::string show(const T& v) {
  std::ostringstream s;
  if constexpr (kIsOptional<T>) {
    if (!v) return "null";
    return show(*v);
  } else if constexpr (std::is_enum_v<T>) {
    s << static_cast<int>(v);
  } else if constexpr (kIsVector<T> || kIsMap<T>) {
    s << v.size() << " entries";
  } else {
    s << v;
  }
  return s.str();
}

// Every field of `want` and `got`, by its path; a nested struct through its fields().
class Compare {
 public:
  Compare(std::string path, std::vector<std::string>& diffs, std::size_t* leaves = nullptr)
      : path_(std::move(path)), diffs_(diffs), leaves_(leaves) {}

  template <class T, class... Tag>
  void operator()(std::string_view key, const T& want, const T& got, Tag...) {
    compare(at(key), want, got);
  }
  template <class Fn>
  void nested(std::string_view key, Fn&& fn) {
    Compare in(at(key), diffs_, leaves_);
    fn(in);
  }
  template <class T>
  void compare(const std::string& where, const T& want, const T& got) {
    if constexpr (Described<T>) {
      Compare in(where, diffs_, leaves_);
      fields(in, want, got);
    } else if constexpr (kIsOptional<T> && Described<typename Element<T>::type>) {
      if (want.has_value() != got.has_value()) {
        diffs_.push_back(where + ": " + (want ? "set" : "null") + " wanted");
      } else if (want) {
        compare(where, *want, *got);
      }
    } else if constexpr (kIsVector<T> && Described<typename Element<T>::type>) {
      if (want.size() != got.size()) {
        diffs_.push_back(where + ": " + std::to_string(want.size()) + " wanted, " +
                         std::to_string(got.size()) + " got");
        return;
      }
      for (std::size_t i = 0; i < want.size(); ++i)
        compare(where + "[" + std::to_string(i) + "]", want[i], got[i]);
    } else {
      if (leaves_) ++*leaves_;
      if (!(want == got))
        diffs_.push_back(where + ": " + show(want) + " wanted, " + show(got) + " got");
    }
  }

 private:
  std::string at(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  std::string path_;
  std::vector<std::string>& diffs_;
  std::size_t* leaves_;
};

template <class T>
std::vector<std::string> differences(const T& want, const T& got, const std::string& name = "") {
  std::vector<std::string> diffs;
  Compare("", diffs).compare(name, want, got);
  return diffs;
}

std::string lines(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

// ------------------------------------------------------------------ write, read

TEST(FactsRoundTrip, EveryFieldIsWrittenAndReadBack) {
  const Facts original = full(1);
  const std::string text = facts_to_json(original);
  // Every field was set, and the writer wrote each: nothing unknown, nothing empty.
  EXPECT_EQ(text.find("null"), std::string::npos) << text;
  EXPECT_EQ(text.find("[]"), std::string::npos) << text;
  EXPECT_EQ(text.find("{}"), std::string::npos) << text;

  Facts back;
  ASSERT_TRUE(import_gpuvet_json(text, back).is_ok());
  const auto diffs = differences(original, back);
  EXPECT_TRUE(diffs.empty()) << lines(diffs);
  EXPECT_EQ(facts_to_json(back), text);
}

TEST(FactsRoundTrip, ASecondSeedDiffersInEveryField) {
  // The merge tests below rely on it: a field both seeds fill alike would hide a conflict.
  std::vector<std::string> diffs;
  std::size_t leaves = 0;
  Compare("", diffs, &leaves).compare("", full(1), full(2));
  EXPECT_GT(leaves, 300u);
  EXPECT_EQ(diffs.size(), leaves) << "fields both seeds fill alike are missing from this list:\n"
                                  << lines(diffs);
}

// ------------------------------------------------------------------ merge

// What the merge must give for one struct, field by field, from the earlier input's value
// (`before`), the later one's (`from`) and the result (`after`): a known value stays, an
// empty one is filled; kAppend lists are joined; maps keep the earlier value of a key; a list
// is filled only when empty. A nested struct or a present optional struct goes field by field.
class ExpectMerged {
 public:
  ExpectMerged(std::string path, std::vector<std::string>& diffs)
      : path_(std::move(path)), diffs_(diffs) {}

  template <class T>
  void operator()(std::string_view key, const T& before, const T& from, const T& after) {
    expect(at(key), before, from, after);
  }
  template <class T>
  void operator()(std::string_view key, const T& before, const T& from, const T& after, Append) {
    T joined = before;
    joined.insert(joined.end(), from.begin(), from.end());
    Compare("", diffs_).compare(at(key), joined, after);
  }
  template <class T, class Tag>
  void operator()(std::string_view key, const T& before, const T& from, const T& after, Tag) {
    expect(at(key), before, from, after);
  }
  template <class Fn>
  void nested(std::string_view key, Fn&& fn) {
    ExpectMerged in(at(key), diffs_);
    fn(in);
  }

  template <class T>
  void expect(const std::string& where, const T& before, const T& from, const T& after) {
    Compare same("", diffs_);
    if constexpr (Described<T>) {
      ExpectMerged in(where + ".", diffs_);
      fields(in, before, from, after);
    } else if constexpr (kIsOptional<T>) {
      if constexpr (Described<typename T::value_type>) {
        if (before && from && after) return expect(where, *before, *from, *after);
      }
      same.compare(where, before ? before : from, after);
    } else if constexpr (kIsMap<T>) {
      T both = before;
      both.insert(from.begin(), from.end());
      same.compare(where, both, after);
    } else if constexpr (kIsVector<T>) {
      same.compare(where, before.empty() ? from : before, after);
    } else if constexpr (std::is_same_v<T, PathType>) {
      same.compare(where, before == PathType::kUnknown ? from : before, after);
    } else if constexpr (std::is_same_v<T, bool>) {
      same.compare(where, before || from, after);  // a flag either input saw stays seen
    } else {
      same.compare(where, before, after);
    }
  }

 private:
  std::string at(std::string_view key) const { return path_ + std::string(key); }
  std::string path_;
  std::vector<std::string>& diffs_;
};

// The kStable fields of a struct, by the name conflict notes give them ("GPU3 pcie.gen_max").
struct StableNames {
  std::string prefix;
  std::vector<std::string>& names;
  template <class T, class... Tag>
  void operator()(std::string_view key, const T& value, Tag...) {
    if constexpr ((std::is_same_v<Tag, Stable> || ...)) names.push_back(prefix + std::string(key));
    if constexpr (Described<T>) {
      StableNames in{prefix + std::string(key) + ".", names};
      fields(in, value);
    }
  }
  template <class Fn>
  void nested(std::string_view key, Fn&& fn) {
    StableNames in{prefix + std::string(key) + ".", names};
    fn(in);
  }
};

std::vector<std::string> stable_names(const std::string& prefix, const auto& t) {
  std::vector<std::string> names;
  StableNames v{prefix, names};
  fields(v, t);
  return names;
}

// The kAppend lists of Facts: the later input's after the earlier one's.
struct AppendedLists {
  std::vector<std::string>& diffs;
  template <class T>
  void operator()(std::string_view, const T&, const T&, const T&) {}
  template <class T, class Tag>
  void operator()(std::string_view, const T&, const T&, const T&, Tag) {}
  template <class T>
  void operator()(std::string_view key, const T& before, const T& from, const T& after, Append) {
    ExpectMerged("", diffs)(key, before, from, after, kAppend);
  }
};

const std::string kOrigin = "later.json";

std::vector<std::string> conflict_notes(const Facts& f) {
  std::vector<std::string> out;
  for (const auto& n : f.notes)
    if (n.rfind("conflict: ", 0) == 0) out.push_back(n);
  return out;
}

// The checks shared by the two merges into a Facts that already holds the same GPUs, pairs
// and host: field by field for those, each list's own rule for the rest.
std::vector<std::string> check_merge(const Facts& before, const Facts& from, const Facts& after) {
  std::vector<std::string> diffs;
  ExpectMerged("", diffs).expect("host", before.host, from.host, after.host);
  // The same GPUs and pairs, record by record (the merge keeps their order by index, by a-b).
  auto records = [&](const std::string& name, const auto& b, const auto& f, const auto& a) {
    if (a.size() != b.size() || f.size() != b.size()) {
      diffs.push_back(name + ": " + std::to_string(a.size()) + " after the merge");
      return;
    }
    for (std::size_t i = 0; i < b.size(); ++i)
      ExpectMerged("", diffs).expect(name + "[" + std::to_string(i) + "]", b[i], f[i], a[i]);
  };
  records("gpus", before.gpus, from.gpus, after.gpus);
  records("pairs", before.pairs, from.pairs, after.pairs);
  // Two kernel logs: one, named by both sources, readable when either was.
  KernelLog log = after.kernel_log;
  if (log.source != before.kernel_log.source + ", " + from.kernel_log.source)
    diffs.push_back("kernel_log.source: " + log.source);
  if (log.readable != (before.kernel_log.readable || from.kernel_log.readable))
    diffs.push_back("kernel_log.readable");
  log.source = before.kernel_log.source;

  ExpectMerged("", diffs).expect("kernel_log", before.kernel_log, from.kernel_log, log);
  // Processes of other pids, and every kAppend list of Facts: the later input's after the
  // earlier one's.
  std::vector<ProcessFacts> processes = before.processes;
  processes.insert(processes.end(), from.processes.begin(), from.processes.end());
  Compare("", diffs).compare("processes", processes, after.processes);
  AppendedLists lists{diffs};
  fields(lists, before, from, after);
  if (after.gpu_facts_unavailable != before.gpu_facts_unavailable)
    diffs.push_back("gpu_facts_unavailable: import_path decides it, not the merge");
  // The earlier notes, the conflicts, then the later input's own with its name in front.
  std::vector<std::string> notes = before.notes;
  for (const auto& n : after.notes)
    if (n.rfind("conflict: ", 0) == 0) notes.push_back(n);
  for (const auto& n : from.notes) notes.push_back(kOrigin + ": " + n);
  Compare("", diffs).compare("notes", notes, after.notes);
  return diffs;
}

TEST(FactsMerge, IntoEmptyFactsEverythingArrives) {
  const Facts from = full(1);
  Facts into;
  merge_facts(into, Facts(from), kOrigin);
  Facts want = from;
  want.gpu_facts_unavailable = false;  // import_path decides it for the merged whole
  for (auto& n : want.notes) n = kOrigin + ": " + n;
  const auto diffs = differences(want, into);
  EXPECT_TRUE(diffs.empty()) << lines(diffs);
}

TEST(FactsMerge, IntoTheSameGpusWithNothingKnownEveryFieldArrives) {
  const Facts from = full(1);
  // The same GPUs (bus ids), pairs (a, b) and another kernel log, with nothing else known.
  Facts before;
  for (const auto& g : from.gpus) {
    GpuFacts same;
    same.index = g.index;
    same.pci_bus_id = g.pci_bus_id;
    before.gpus.push_back(same);
  }
  for (const auto& p : from.pairs) {
    GpuPair same;
    same.a = p.a;
    same.b = p.b;
    before.pairs.push_back(same);
  }
  before.kernel_log.source = "dmesg";

  Facts after = before;
  merge_facts(after, Facts(from), kOrigin);
  EXPECT_TRUE(conflict_notes(after).empty()) << lines(after.notes);
  auto diffs = check_merge(before, from, after);
  EXPECT_TRUE(diffs.empty()) << lines(diffs);

  // Nothing was known, so the GPUs, pairs and host are now exactly the later input's.
  const auto gpus = differences(from.gpus, after.gpus, "gpus");
  EXPECT_TRUE(gpus.empty()) << lines(gpus);
  const auto pairs = differences(from.pairs, after.pairs, "pairs");
  EXPECT_TRUE(pairs.empty()) << lines(pairs);
  const auto host = differences(from.host, after.host, "host");
  EXPECT_TRUE(host.empty()) << lines(host);
}

TEST(FactsMerge, IntoTheSameGpusWithOtherValuesStableConflictsAreNotes) {
  const Facts from = full(1);
  // Another input about the same GPUs (same bus ids) and pairs, every value different.
  Facts before = full(2);
  ASSERT_EQ(before.gpus.size(), from.gpus.size());
  for (std::size_t i = 0; i < from.gpus.size(); ++i) {
    before.gpus[i].pci_bus_id = from.gpus[i].pci_bus_id;
    // Same link numbers, so links are merged field by field too.
    for (std::size_t l = 0; l < from.gpus[i].nvlinks.size(); ++l)
      before.gpus[i].nvlinks[l].link = from.gpus[i].nvlinks[l].link;
  }
  ASSERT_EQ(before.pairs.size(), from.pairs.size());
  for (std::size_t i = 0; i < from.pairs.size(); ++i) {
    before.pairs[i].a = from.pairs[i].a;
    before.pairs[i].b = from.pairs[i].b;
  }

  Facts after = before;
  merge_facts(after, Facts(from), kOrigin);
  auto diffs = check_merge(before, from, after);
  EXPECT_TRUE(diffs.empty()) << lines(diffs);

  // One note per kStable field, naming it, both values and the later input; none for the
  // bus id both inputs agree on.
  std::vector<std::string> want = stable_names("", before.host);
  for (const auto& g : before.gpus)
    for (const auto& name : stable_names("GPU" + std::to_string(g.index) + " ", g))
      if (name.find("pci_bus_id") == std::string::npos) want.push_back(name);
  const auto notes = conflict_notes(after);
  EXPECT_EQ(notes.size(), want.size()) << lines(notes);
  EXPECT_GE(want.size(), 3u + 2 * 14u);  // today's set: 3 of the host, 15 per GPU
  for (const auto& name : want) {
    bool found = false;
    for (const auto& n : notes)
      found = found || (n.rfind("conflict: " + name + " is ", 0) == 0 &&
                        n.find(" in " + kOrigin + "; keeping the first") != std::string::npos);
    EXPECT_TRUE(found) << "no conflict note for " << name << "\n" << lines(notes);
  }
}

}  // namespace
}  // namespace gpuvet::import
