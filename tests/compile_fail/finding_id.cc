// A rule naming a finding id: compiles when the id is a catalog row, fails to compile (with
// "finding_id_is_not_in_the_catalog" in the message) when it is a typo. Built by two CTest
// tests (tests/CMakeLists.txt), one each way; never part of a program.
#include "rules/catalog_table.h"

#ifdef GPUVET_CATALOGUED_ID
constexpr gpuvet::rules::FindingId kId = "nccl-error";
#else
constexpr gpuvet::rules::FindingId kId = "nccl-eror";
#endif

int main() { return kId.str().empty() ? 1 : 0; }
