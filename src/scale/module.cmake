# gpuvet scale: presets, statistics and renderers everywhere; the GPU engine with GPUVET_CUDA.
list(APPEND GPUVET_SOURCES src/scale/scale.cc)
list(APPEND GPUVET_TESTS src/scale/scale_test.cc)
if(GPUVET_CUDA)
  list(APPEND GPUVET_SOURCES src/scale/scale_engine.cu)
  list(APPEND GPUVET_GPU_TESTS src/scale/scale_engine_gpu_test.cc)
endif()
