// Draining and resuming a Slurm node through scontrol, touching only gpuvet's own drains.
#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gpuvet/sched.h"

namespace gpuvet {

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string upper(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return r;
}

// The value of the whitespace-separated token `key`= (a key that starts a token).
std::optional<std::string_view> token_value(std::string_view text, std::string_view key) {
  for (std::size_t at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
    if (at != 0 && !std::isspace(static_cast<unsigned char>(text[at - 1]))) continue;
    std::string_view rest = text.substr(at + key.size());
    const std::size_t end = rest.find_first_of(" \t\r\n");
    return rest.substr(0, end);
  }
  return std::nullopt;
}

// Reason= is the last field scontrol prints for a node and may hold spaces: the rest of its
// line, without the " [user@time]" Slurm appends.
std::string reason_of(std::string_view text) {
  auto value = token_value(text, "Reason=");
  if (!value) return {};
  const std::size_t at = static_cast<std::size_t>(value->data() - text.data());
  std::string_view rest = text.substr(at);
  rest = rest.substr(0, rest.find_first_of("\r\n"));
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back())))
    rest.remove_suffix(1);
  if (!rest.empty() && rest.back() == ']') {
    const std::size_t open = rest.rfind(" [");
    if (open != std::string_view::npos && rest.find('@', open) != std::string_view::npos)
      rest = rest.substr(0, open);
  }
  if (rest == "(null)" || rest == "none") return {};
  return std::string(rest);
}

std::string one_line(std::string_view s) {
  std::string r;
  for (char c : s) {
    if (c == '\n' || c == '\r') {
      if (!r.empty() && r.back() != ' ') r += ' ';
    } else {
      r += c;
    }
  }
  while (!r.empty() && r.back() == ' ') r.pop_back();
  return r;
}

Result<CommandResult> run_scontrol(const CommandRunner& runner, const SlurmDrainOptions& o,
                                   std::vector<std::string> args) {
  std::vector<std::string> argv{o.scontrol};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string shown = o.scontrol;
  for (const auto& a : args) shown += " " + a;
  auto r = runner.run(argv, o.timeout, 1 << 20);
  if (!r.is_ok()) {
    if (r.status().code() == StatusCode::kNotFound)
      return Status::not_found(fmt::format(
          "slurm: {} not found (install slurm-client, or run where slurmd runs)", o.scontrol));
    return Status::unavailable(
        fmt::format("slurm: `{}` could not run: {}", shown, r.status().message()));
  }
  if (r.value().timed_out)
    return Status::timeout(
        fmt::format("slurm: `{}` did not answer in {} ms", shown, o.timeout.count()));
  if (r.value().exit_code != 0) {
    std::string why = one_line(r.value().err.empty() ? r.value().out : r.value().err);
    if (why.size() > 300) why = why.substr(0, 300) + "...";
    return Status::unavailable(fmt::format("slurm: `{}` exited with {}: {}", shown,
                                           r.value().exit_code, why.empty() ? "(no output)" : why));
  }
  return r;
}

}  // namespace

bool is_gpuvet_reason(std::string_view reason) {
  return starts_with(reason, kSlurmReasonPrefix) ||
         (reason.size() >= kSlurmReasonMarker.size() &&
          reason.substr(reason.size() - kSlurmReasonMarker.size()) == kSlurmReasonMarker);
}

std::string slurm_drain_reason(std::string_view cause, int more) {
  std::string c;
  for (const char ch : cause) {
    if (c.size() >= kSlurmCauseWidth) break;
    c += ch >= 0x20 && ch < 0x7F ? ch : '?';
  }
  while (!c.empty() && c.back() == ' ') c.pop_back();
  if (c.empty()) c = "failed";
  if (more > 0) c += fmt::format(" +{}", more);
  return c + std::string(kSlurmReasonMarker);
}

bool SlurmNodeState::reason_is_ours() const { return is_gpuvet_reason(reason); }

const char* slurm_change_name(SlurmChange c) {
  switch (c) {
    case SlurmChange::kNone:
      return "none";
    case SlurmChange::kDrained:
      return "drained";
    case SlurmChange::kReasonUpdated:
      return "reason-updated";
    case SlurmChange::kResumed:
      return "resumed";
    case SlurmChange::kKeptForeign:
      return "kept-foreign-drain";
    case SlurmChange::kLeftDown:
      return "left-down";
    case SlurmChange::kUnknownHealth:
      return "unknown-health";
  }
  return "none";
}

Result<SlurmNodeState> parse_scontrol_show_node(std::string_view text, std::string_view node) {
  SlurmNodeState s;
  s.node = std::string(node);
  auto name = token_value(text, "NodeName=");
  if (name && *name != node)
    return Status::invalid_input(
        fmt::format("slurm: scontrol describes node {}, not {}", *name, node));
  auto state = token_value(text, "State=");
  if (!state || state->empty())
    return Status::invalid_input(
        fmt::format("slurm: no State= for node {} in scontrol's answer: {}", node,
                    one_line(text.substr(0, 200))));
  s.state = std::string(*state);
  // "DOWN*+DRAIN": the base state, then '+'-joined flags; '*', '~', '#', '!', '%', '$', '@',
  // '^' and '-' are suffixes for not responding, powered down and the like.
  std::string_view rest = *state;
  bool first = true;
  while (!rest.empty()) {
    const std::size_t plus = rest.find('+');
    std::string part = upper(rest.substr(0, plus));
    while (!part.empty() && !std::isalnum(static_cast<unsigned char>(part.back())) &&
           part.back() != '_')
      part.pop_back();
    if (first)
      s.base = part;
    else if (!part.empty())
      s.flags.push_back(part);
    first = false;
    if (plus == std::string_view::npos) break;
    rest = rest.substr(plus + 1);
  }
  const auto has = [&](std::string_view f) {
    return std::find(s.flags.begin(), s.flags.end(), f) != s.flags.end() || s.base == f;
  };
  // A node drained while idle shows IDLE+DRAIN; older outputs print DRAINED / DRAINING.
  s.drain = has("DRAIN") || has("DRAINED") || has("DRAINING");
  s.down = has("DOWN") || has("FAIL") || has("FAILING");
  s.reason = reason_of(text);
  return s;
}

Result<std::string> slurm_node_name(const char* slurmd_nodename) {
  if (slurmd_nodename == nullptr || *slurmd_nodename == '\0')
    return Status::invalid_input(
        "--drain slurm: SLURMD_NODENAME is not set; it runs where slurmd runs it (a "
        "HealthCheckProgram, prolog or epilog), which names the node");
  std::string name(slurmd_nodename);
  for (char c : name)
    if (std::isspace(static_cast<unsigned char>(c)) || c == '=')
      return Status::invalid_input(
          fmt::format("--drain slurm: SLURMD_NODENAME '{}' is not a "
                      "node name",
                      name));
  return name;
}

Result<SlurmOutcome> apply_slurm_drain(const SlurmNodeAction& action, const CommandRunner& runner,
                                       const SlurmDrainOptions& options) {
  if (action.node.empty()) return Status::invalid_input("slurm: no node name");
  if (action.health == SlurmHealth::kUnhealthy &&
      (!is_gpuvet_reason(action.reason) ||
       action.reason.find_first_of("\r\n") != std::string::npos))
    return Status::invalid_input(
        fmt::format("slurm: a drain reason must be one line ending '{}': '{}'", kSlurmReasonMarker,
                    action.reason));

  auto shown = run_scontrol(runner, options, {"show", "node", action.node});
  if (!shown.is_ok()) return shown.status();
  auto state = parse_scontrol_show_node(shown.value().out, action.node);
  if (!state.is_ok()) return state.status();

  SlurmOutcome out;
  out.before = state.value();
  const SlurmNodeState& s = out.before;
  const std::string& node = action.node;
  const auto was = [&] {
    return s.reason.empty() ? s.state : fmt::format("{}, reason \"{}\"", s.state, s.reason);
  };

  if (action.health == SlurmHealth::kUnknown) {
    out.change = SlurmChange::kUnknownHealth;
    out.message =
        fmt::format("slurm: {} left as it is ({}): the gate could not judge it", node, was());
    return out;
  }
  if (s.down) {
    out.change = SlurmChange::kLeftDown;
    out.message = fmt::format("slurm: {} is {}: left to whoever set it", node, was());
    return out;
  }
  if (action.health == SlurmHealth::kUnhealthy) {
    if (s.drain && !s.reason_is_ours()) {
      out.change = SlurmChange::kKeptForeign;
      out.message =
          fmt::format("slurm: {} already drained by someone else ({}): their drain and reason kept",
                      node, was());
      return out;
    }
    if (s.drain && s.reason == action.reason) {
      out.change = SlurmChange::kNone;
      out.message = fmt::format("slurm: {} already drained: {}", node, action.reason);
      return out;
    }
    auto done = run_scontrol(runner, options,
                             {"update", fmt::format("nodename={}", node), "state=drain",
                              fmt::format("reason={}", action.reason)});
    if (!done.is_ok()) return done.status();
    out.change = s.drain ? SlurmChange::kReasonUpdated : SlurmChange::kDrained;
    out.message = s.drain ? fmt::format("slurm: {} still drained, reason now: {} (was: {})", node,
                                        action.reason, s.reason)
                          : fmt::format("slurm: drained {}: {}", node, action.reason);
    return out;
  }
  // Healthy: lift only gpuvet's own drain.
  if (!s.drain) {
    out.change = SlurmChange::kNone;
    out.message = fmt::format("slurm: {} healthy and in service ({})", node, s.state);
    return out;
  }
  if (!s.reason_is_ours()) {
    out.change = SlurmChange::kKeptForeign;
    out.message = fmt::format("slurm: {} healthy, but drained by someone else ({}): left drained",
                              node, was());
    return out;
  }
  auto done =
      run_scontrol(runner, options, {"update", fmt::format("nodename={}", node), "state=resume"});
  if (!done.is_ok()) return done.status();
  out.change = SlurmChange::kResumed;
  out.message = fmt::format("slurm: resumed {} (gpuvet's drain was: {})", node, s.reason);
  return out;
}

}  // namespace gpuvet
