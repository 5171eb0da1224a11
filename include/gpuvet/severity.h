// gpuvet/severity.h — how bad a finding is, from "ok" to "critical".
//
// The lowest public type after Facts: hardware tables (the Xid table's default severities),
// the rules and every renderer share it. Ordered: a larger value is worse. Plain value type,
// thread-safe.
#pragma once

namespace gpuvet {

enum class Severity { kOk = 0, kInfo = 1, kWarning = 2, kCritical = 3 };
const char* severity_name(Severity s);  // "ok", "info", "warning", "critical"

}  // namespace gpuvet
