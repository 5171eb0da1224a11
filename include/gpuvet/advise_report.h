// gpuvet/advise_report.h — `gpuvet advise` rendered: the terminal report (the recommendation,
// the numbers that decide it, what would change it, then every candidate term by term, the
// assumptions and notes) and the gpuvet.advise/1 JSON document (docs/advise.md).
//
// Beside report.h rather than in it, so the many files that render facts and diagnoses do not
// include the advise model. Pure functions of their input; thread-safe.
#pragma once

#include <string>

#include "gpuvet/advise.h"

namespace gpuvet {

std::string render_advise_text(const AdviseReport& report);
// `indent` as JsonOptions::indent (-1: one line).
std::string advise_to_json(const AdviseReport& report, int indent = 2);

}  // namespace gpuvet
