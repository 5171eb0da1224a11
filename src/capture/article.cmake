# Tests that replay the example outputs of the seed article's practical tasks.
list(APPEND GPUVET_TESTS tests/article_tasks_test.cc)
