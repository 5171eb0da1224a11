// `gpuvet report --html OUT.html FILES…`: one self-contained page from gpuvet's own JSON
// outputs (docs/html-report.md).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "gpuvet/html_report.h"
#include "gpuvet/report.h"

namespace gpuvet::cli {

std::function<Outcome()> setup_report(CLI::App& app) {
  auto out = std::make_shared<std::string>();
  auto files = std::make_shared<std::vector<std::string>>();
  app.add_option("--html", *out,
                 "Write the page to FILE (written atomically: a reader sees the old file or the "
                 "whole new one)")
      ->required();
  app.add_option("FILES", *files,
                 "gpuvet JSON outputs: diagnose/facts/gate/bench/scale --json, watch --json "
                 "lines, watch --record files (recognised by content)")
      ->required();
  return [out, files]() -> Outcome {
    auto page = html_report_from_files(*files);
    if (!page.is_ok()) {
      std::cerr << "gpuvet: report: " << terminal_safe(page.status().message()) << "\n";
      return {kExitUnusable, false};
    }
    if (const Status s = write_file_atomically(*out, page.value()); !s.is_ok()) {
      std::cerr << "gpuvet: report: " << terminal_safe(s.message()) << "\n";
      return {kExitUnusable, false};
    }
    std::cout << "Wrote " << terminal_safe(*out) << " (" << page.value().size() / 1024
              << " KiB) from " << files->size() << " input(s)\n";
    return {kExitOk, false};
  };
}

}  // namespace gpuvet::cli
