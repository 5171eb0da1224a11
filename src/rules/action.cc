// The action vocabulary of findings (JSON `action`) and the bound of an expected value.
#include <string>
#include <string_view>

#include "gpuvet/diagnose.h"

namespace gpuvet {

namespace {

constexpr Action kActions[] = {Action::kNone,        Action::kWatch, Action::kFixConfig,
                               Action::kReseatOrRma, Action::kDrain, Action::kFixApplication};

}  // namespace

const char* action_name(Action a) {
  switch (a) {
    case Action::kUnset:
      return "";
    case Action::kNone:
      return "none";
    case Action::kWatch:
      return "watch";
    case Action::kFixConfig:
      return "fix-config";
    case Action::kReseatOrRma:
      return "reseat-or-rma";
    case Action::kDrain:
      return "drain";
    case Action::kFixApplication:
      return "fix-application";
  }
  return "";
}

std::optional<Action> parse_action(std::string_view name) {
  for (const Action a : kActions)
    if (name == action_name(a)) return a;
  return std::nullopt;
}

Action finding_action(const Finding& f) {
  if (f.action && *f.action != Action::kUnset) return *f.action;
  const CatalogEntry* e = find_catalog_entry(f.id);
  return e && e->action != Action::kUnset ? e->action : Action::kNone;
}

std::string finding_decision(const Finding& f) {
  const CatalogEntry* e = find_catalog_entry(f.id);
  const Action action = finding_action(f);
  if (e && (e->action == Action::kUnset || e->action == action)) return e->decision;
  switch (action) {
    case Action::kUnset:
    case Action::kNone:
      return "Nothing to do: expected here.";
    case Action::kWatch:
      return "Nothing to change now; keep an eye on it: it matters if it grows or comes back.";
    case Action::kFixConfig:
      return "A setting, not the hardware: fix the configuration the evidence names.";
    case Action::kReseatOrRma:
      return "The hardware is suspect: reseat, swap the riser or cable, and return the part if "
             "it persists.";
    case Action::kDrain:
      return "Take the node out of service now, then inspect it.";
    case Action::kFixApplication:
      return "The job itself is the cause: its code, launch, binding or data path.";
  }
  return {};
}

std::optional<std::string> finding_fault(const Finding& f) {
  const Action a = finding_action(f);
  if (f.severity < Severity::kWarning || (a != Action::kReseatOrRma && a != Action::kDrain))
    return std::nullopt;
  return f.fault ? *f.fault : f.id;
}

const char* bound_name(Bound b) {
  switch (b) {
    case Bound::kAtLeast:
      return "at-least";
    case Bound::kAtMost:
      return "at-most";
    case Bound::kExactly:
      return "exactly";
  }
  return "exactly";
}

}  // namespace gpuvet
