// rules/acks.cc — operators' acknowledgements of known conditions (acks.toml): read, checked,
// and applied to a diagnosis so that an acknowledged finding is shown but moves no verdict.

#include <algorithm>
#include <ctime>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/small_file.h"
#include "core/toml_document.h"
#include "core/util.h"
#include "gpuvet/diagnose.h"

namespace gpuvet {

namespace {

constexpr std::int64_t kDay = 86400;
constexpr std::int64_t kLongestAck = 366 * kDay;  // an ack is temporary: a year at most

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

std::string utc_text(std::int64_t t) { return format_utc(t, "%Y-%m-%d %H:%M UTC"); }

// The expiry: a TOML date (the ack holds through that day, UTC), a date-time with its
// offset, or the same as a string ("2026-12-20").
std::optional<std::int64_t> expiry_of(const toml::node& n) {
  auto from_date = [](const toml::date& d) {
    return days_from_civil(d.year, d.month, d.day) * kDay + kDay - 1;
  };
  if (const auto* d = n.as_date()) return from_date(d->get());
  if (const auto* dt = n.as_date_time()) {
    const toml::date_time& v = dt->get();
    std::int64_t t = days_from_civil(v.date.year, v.date.month, v.date.day) * kDay +
                     v.time.hour * 3600 + v.time.minute * 60 + v.time.second;
    if (v.offset) t -= static_cast<std::int64_t>(v.offset->minutes) * 60;
    return t;
  }
  if (const auto* s = n.as_string()) {
    // A date written as a string: read as the TOML date it spells (through parse_toml, which
    // keeps a non-ASCII character away from toml++).
    auto re = parse_toml("x = " + std::string(s->get()), "expires");
    if (re.is_ok() && re.value()["x"].node()) return expiry_of(*re.value()["x"].node());
  }
  return std::nullopt;
}

// An ack's severity, by the names severity_name gives.
std::optional<Severity> severity_named(std::string_view s) {
  for (const Severity v : {Severity::kInfo, Severity::kWarning, Severity::kCritical})
    if (s == severity_name(v)) return v;
  return std::nullopt;
}

// Every subject of the finding is one the ack lists (a new subject is never silenced).
bool covers(const Ack& a, const Finding& f) {
  if (a.finding != f.id || f.severity > a.severity || f.subjects.empty()) return false;
  return std::all_of(f.subjects.begin(), f.subjects.end(), [&](const std::string& s) {
    return std::find(a.subjects.begin(), a.subjects.end(), s) != a.subjects.end();
  });
}

}  // namespace

Result<std::vector<Ack>> parse_acks(std::string_view toml_text, const std::string& origin,
                                    std::int64_t now_unix) {
  auto parsed = parse_toml(toml_text, origin);
  if (!parsed.is_ok()) return parsed.status();
  const toml::table& root = parsed.value();
  for (const auto& [key, node] : root)
    if (key.str() != "ack")
      return Status::invalid_input(
          fmt::format("{}: unknown key '{}' (acks are [[ack]] tables)", origin, key.str()));
  std::vector<Ack> out;
  const toml::node* list = root.get("ack");
  if (!list) return out;
  const toml::array* arr = list->as_array();
  if (!arr) return Status::invalid_input(fmt::format("{}: 'ack' must be [[ack]] tables", origin));
  for (std::size_t i = 0; i < arr->size(); ++i) {
    const std::string where = fmt::format("{}, ack {}", origin, i + 1);
    const toml::table* t = (*arr)[i].as_table();
    if (!t) return Status::invalid_input(where + ": not a table");
    for (const auto& [key, node] : *t) {
      const std::string_view k = key.str();
      if (k != "finding" && k != "subjects" && k != "severity" && k != "reason" && k != "expires" &&
          k != "by")
        return Status::invalid_input(fmt::format(
            "{}: unknown key '{}' (finding, subjects, severity, reason, expires, by)", where, k));
    }
    Ack a;
    a.origin = where;
    const auto finding = (*t)["finding"].value<std::string>();
    if (!finding || !find_catalog_entry(*finding))
      return Status::invalid_input(fmt::format(
          "{}: 'finding' must be a finding id of the catalog (gpuvet findings lists them)", where));
    a.finding = *finding;
    const toml::array* subjects = (*t)["subjects"].as_array();
    if (!subjects || subjects->empty())
      return Status::invalid_input(
          where + ": 'subjects' must list the finding's subjects (\"GPU3\", \"GPU0-GPU1\", …)");
    for (const auto& s : *subjects) {
      const auto v = s.value<std::string>();
      if (!v || v->empty()) return Status::invalid_input(where + ": every subject is a string");
      a.subjects.push_back(*v);
    }
    if (const toml::node* sev = t->get("severity")) {
      const auto name = sev->value<std::string>();
      const auto parsed_sev = name ? severity_named(*name) : std::nullopt;
      if (!parsed_sev)
        return Status::invalid_input(where + ": 'severity' is info, warning or critical");
      a.severity = *parsed_sev;
    }
    const auto reason = (*t)["reason"].value<std::string>();
    if (!reason || reason->empty())
      return Status::invalid_input(where + ": 'reason' says why (a ticket, an RMA, …)");
    a.reason = *reason;
    const toml::node* exp = t->get("expires");
    const auto expires = exp ? expiry_of(*exp) : std::nullopt;
    if (!expires)
      return Status::invalid_input(
          where + ": 'expires' is a date (2026-12-20) or a date-time with its offset");
    if (*expires > now_unix + kLongestAck)
      return Status::invalid_input(
          fmt::format("{}: expires {}, more than a year ahead: an ack is temporary", where,
                      utc_text(*expires)));
    a.expires_unix = *expires;
    if (const toml::node* by = t->get("by")) {
      const auto v = by->value<std::string>();
      if (!v) return Status::invalid_input(where + ": 'by' is a string");
      a.by = *v;
    }
    out.push_back(std::move(a));
  }
  return out;
}

Result<std::vector<Ack>> load_acks(const std::string& path, std::int64_t now_unix) {
  auto text = read_small_file(path, std::size_t{1} << 20, "acks file");
  if (!text.is_ok()) return text.status();
  return parse_acks(text.value(), path, now_unix);
}

void apply_acks(Diagnosis& d, const std::vector<Ack>& acks, std::int64_t now_unix) {
  if (acks.empty()) return;
  for (auto& f : d.findings)
    for (const auto& a : acks) {
      if (!covers(a, f)) continue;
      if (a.expires_unix < now_unix) {
        d.notes.push_back(fmt::format("ack expired {} ({}): {} {} counts again",
                                      utc_text(a.expires_unix), a.origin, f.id,
                                      fmt::format("{}", fmt::join(f.subjects, ","))));
        continue;
      }
      f.acknowledged = AckNote{a.reason, a.expires_unix, a.by};
      d.notes.push_back(fmt::format("acknowledged until {}: {} {}: {}{}", utc_text(a.expires_unix),
                                    f.id, fmt::join(f.subjects, ","), a.reason,
                                    a.by ? " (" + *a.by + ")" : std::string()));
      break;
    }
  d.worst = Severity::kOk;
  for (const auto& f : d.findings)
    if (!f.acknowledged) d.worst = std::max(d.worst, f.severity);
}

}  // namespace gpuvet
