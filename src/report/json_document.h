// report/json_document.h — the facts part of the gpuvet.report/1 document as a JSON value,
// so the diagnosis report can add its keys to the same object. Internal to src/report.
#pragma once

#include <nlohmann/json.hpp>

#include "gpuvet/facts.h"
#include "gpuvet/report.h"

namespace gpuvet::report {

nlohmann::ordered_json facts_document(const Facts& facts, const JsonOptions& options);

}  // namespace gpuvet::report
