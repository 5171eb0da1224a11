// gpuvet/launch_report.h — `gpuvet launch` rendered: the table of jobs (GPU, node, binding read
// back, PID, wall time, how it ended, the GPU NVML saw it on, its GPU's clocks and
// temperature, its throughput), the first failure with its log tail, the launch-* findings;
// and the gpuvet.launch/1 JSON document (docs/launch.md).
//
// Beside report.h rather than in it, so the renderers of facts do not include the launch
// model. Pure functions of their input; thread-safe.
#pragma once

#include <string>

#include "gpuvet/facts.h"
#include "gpuvet/launch.h"

namespace gpuvet {

// `facts`: the node the jobs ran on (UUIDs and bus ids of the findings' GPUs).
std::string render_launch_text(const LaunchReport& report, const LaunchOptions& options);
std::string launch_to_json(const LaunchReport& report, const LaunchOptions& options,
                           const Facts& facts, int indent = 2);

// `gpuvet launch --in-task`: the lines it prints on stderr before the command replaces it
// (who the task is, its GPU and node, its placement, notes, findings), and the
// gpuvet.launch-task/1 document of --report.
std::string render_task_text(const TaskCheck& check, const Facts& facts);
std::string task_to_json(const TaskCheck& check, const Facts& facts, int indent = 2);

}  // namespace gpuvet
