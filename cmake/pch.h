// The heavy headers nearly every file of gpuvet includes, precompiled once per program
// (CMakeLists.txt, GPUVET_PCH_ENABLE) instead of parsed once per file. Only what the files
// include themselves: a file must still compile without it.
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>
