// `gpuvet man`, `gpuvet completion bash` and the --version text: generated from the command
// table and each command's registered options (add_commands), so the manual page and the
// completion cannot drift from the command line.
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "build_info.h"
#include "commands.h"

namespace gpuvet::cli {

std::string version_text() {
  const BuildInfo& b = kBuildInfo;
  return fmt::format(
      "gpuvet {} (commit {}, {} build{})\n"
      "  NVML: loaded at run time (libnvidia-ml.so.1, or --nvml / $GPUVET_NVML_LIBRARY)\n"
      "  CUDA/NCCL measurements (bench, scale): {}\n"
      "  Prometheus /metrics server (export --listen): in every build",
      b.version, b.commit, b.build_type[0] ? b.build_type : "default",
      b.portable ? ", portable: third-party libraries static" : "",
      b.cuda ? "compiled in (CUDA runtime static; libcuda, NCCL and cuBLASLt loaded at run time)"
             : "not compiled in (built without nvcc)");
}

namespace {

// Roff text: backslashes and leading dots/quotes escaped, dashes as \-.
std::string roff(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
  }
  if (!out.empty() && (out.front() == '.' || out.front() == '\'')) out.insert(0, "\\&");
  return out;
}

// An option as a reader types it: "-q, --quiet", "--gpus LIST".
std::string option_words(const CLI::Option* o) {
  std::string names;
  for (const auto& n : o->get_snames()) names += (names.empty() ? "-" : ", -") + n;
  for (const auto& n : o->get_lnames()) names += (names.empty() ? "--" : ", --") + n;
  if (names.empty()) return "";  // a positional
  if (o->get_type_size() != 0 && !o->get_type_name().empty()) names += " " + o->get_type_name();
  return names;
}

std::string positional_words(const CLI::App* sub) {
  std::string s;
  for (const CLI::Option* o : sub->get_options())
    if (o->get_lnames().empty() && o->get_snames().empty())
      s += fmt::format(" [{}{}]", o->get_name(), o->get_expected_max() > 1 ? "…" : "");
  return s;
}

struct App {
  CLI::App app{kAppDescription};
  std::function<Outcome()> run;
  App() { add_commands(app, run); }
};

std::string man_page() {
  App a;
  std::string m;
  m += fmt::format(".TH GPUVET 1 \"\" \"gpuvet {}\" \"User Commands\"\n", kBuildInfo.version);
  m += ".SH NAME\ngpuvet \\- why a multi\\-GPU machine is slower, jerkier or flakier than it "
       "should be\n";
  m += ".SH SYNOPSIS\n.B gpuvet\n.I COMMAND\n[\\fIOPTIONS\\fR]\n.br\n.B gpuvet\n\\-\\-version | "
       "\\-\\-help\n";
  m += ".SH DESCRIPTION\n";
  m += "gpuvet runs the multi\\-GPU triage playbook (topology, PCIe, P2P and NVLink, NUMA, clocks "
       "and throttling, ECC and Xid, process mapping, host CPU, I/O and network pressure), "
       "proves it with measurements (bandwidth, all\\-reduce, 1\\-vs\\-N scaling with tail "
       "latency), gates nodes and fleets against a baseline, and advises; live on a node, or "
       "offline from saved outputs (\\fB\\-\\-from\\fR).\n";
  m += ".SH COMMANDS\n";
  for (const CLI::App* sub : a.app.get_subcommands({})) {
    m += fmt::format(".SS \"{}{}\"\n", roff(sub->get_name()), roff(positional_words(sub)));
    m += roff(sub->get_description()) + "\n";
    for (const CLI::Option* o : sub->get_options()) {
      const std::string words = option_words(o);
      if (words.empty() || words == "-h, --help") continue;
      m += ".TP\n.B " + roff(words) + "\n" + roff(o->get_description());
      if (!o->get_default_str().empty()) m += " (default: " + roff(o->get_default_str()) + ")";
      m += "\n";
    }
  }
  m += ".SH EXIT STATUS\n"
       ".TP\n.B 0\nnothing wrong, or information only\n"
       ".TP\n.B 1\na warning finding\n"
       ".TP\n.B 2\na critical finding\n"
       ".TP\n.B 3\nunusable input: a bad option, an unreadable or unrecognised file, no GPU "
       "where one is needed\n"
       ".PP\n\\fBgpuvet launch\\fR exits with the first failed job's code; \\fBgpuvet "
       "ckpt\\-slot\\fR with its command's (124 when no slot came in time).\n";
  m += ".SH ENVIRONMENT\n"
       ".TP\n.B GPUVET_NVML_LIBRARY\nthe NVML library to load instead of libnvidia\\-ml.so.1\n"
       ".TP\n.B NO_COLOR\nno colour in the text output\n"
       ".TP\n.B GPUVET_CKPT_SLOTS, GPUVET_CKPT_DIR\nthe defaults of \\fBgpuvet ckpt\\-slot\\fR "
       "(set by \\fBgpuvet launch \\-\\-ckpt\\-slots\\fR)\n";
  m += ".SH SEE ALSO\n"
       "The finding catalog: \\fBgpuvet findings\\fR; the saved outputs \\-\\-from reads: "
       "\\fBgpuvet formats\\fR; the documentation under /usr/share/doc/gpuvet.\n";
  return m;
}

// Bash: the first word is a command; after it, that command's options; values are files.
std::string bash_completion() {
  App a;
  std::string cases, names;
  for (const CLI::App* sub : a.app.get_subcommands({})) {
    names += (names.empty() ? "" : " ") + sub->get_name();
    std::string opts;
    for (const CLI::Option* o : sub->get_options()) {
      for (const auto& n : o->get_snames()) opts += " -" + n;
      for (const auto& n : o->get_lnames()) opts += " --" + n;
    }
    cases += fmt::format("    {}) opts=\"{}\" ;;\n", sub->get_name(),
                         opts.empty() ? "" : opts.substr(1));
  }
  return fmt::format(
      R"(# bash completion for gpuvet (generated by `gpuvet completion bash`: do not edit)
_gpuvet() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} cmd="" i opts=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${{COMP_WORDS[i]}} in
      --) return 0 ;;  # the command a launch runs: bash's own completion is not ours to give
      -*) ;;
      *) cmd=${{COMP_WORDS[i]}}; break ;;
    esac
  done
  if [[ -z $cmd ]]; then
    COMPREPLY=($(compgen -W "{} --help --version" -- "$cur"))
    return 0
  fi
  case $cmd in
{}  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts --help" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}}
complete -o filenames -F _gpuvet gpuvet
)",
      names, cases);
}

}  // namespace

std::function<Outcome()> setup_man(CLI::App& app) {
  (void)app;
  return [] {
    std::cout << man_page() << std::flush;
    return Outcome{kExitOk, false};
  };
}

std::function<Outcome()> setup_completion(CLI::App& app) {
  auto shell = std::make_shared<std::string>();
  app.add_option("shell", *shell, "The shell (bash)")->required()->check(CLI::IsMember({"bash"}));
  return [shell] {
    std::cout << bash_completion() << std::flush;
    return Outcome{kExitOk, false};
  };
}

}  // namespace gpuvet::cli
