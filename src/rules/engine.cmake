list(APPEND GPUVET_SOURCES src/rules/diagnose.cc src/rules/thresholds.cc src/report/diagnosis.cc)
list(APPEND GPUVET_TESTS src/rules/diagnose_test.cc tests/diagnose_scenarios_test.cc tests/corpus_diagnose_test.cc)
