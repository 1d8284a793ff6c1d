// The host under test: an executable that links ExecuTorch's CUDA backend the way a static runner does
// (target_link_libraries(host PRIVATE aoti_cuda_backend), so the backend's own usage requirements decide
// --whole-archive and --export-dynamic, and the core runtime comes from the tree's executorch_core).
// It loads libraries with RTLD_NOW | RTLD_LOCAL as the backend loads an AOTInductor wrapper: a library
// loads only if every symbol it needs is in this process's dynamic symbol table, that is, in the shims
// the pull request compiled (libaoti_cuda_shims.so, which this host links), not in a stand-in.
//
// Usage:
//   smoke_backend_host LIBRARY...
//     Prints "loaded: LIBRARY" or "dlopen failed: <dlerror()>" per library; exit 0 all loaded, 10 otherwise.
//   smoke_backend_host --run WRAPPER.so INPUT.bin ROWS COLS OUTPUT.bin
//     Initializes the runtime and asks its registry for the CUDA backend (where the tree has one), loads
//     the wrapper, drives its model container as CudaBackend::execute does (...CreateWithDevice, ...Run)
//     on one float32 input and writes the first output as raw float32. Prints "registered: ...",
//     "loaded: ...", then "ran: N values" (exit 0); or "dlopen failed: ..." (10), "failed: ..." (11).
//
// The host names no aoti_torch_* symbol at link time: it finds the few it calls with dlsym, so that a
// shim missing from the library shows up where the backend meets it, when the wrapper is loaded.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#if __has_include(<executorch/runtime/backend/interface.h>)
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/platform/runtime.h>
#define SMOKE_HAS_RUNTIME 1
#endif

namespace {

struct AtenTensorOpaque;
typedef AtenTensorOpaque *AtenTensorHandle;
typedef int32_t (*CreateFunction)(void **, size_t, const char *, const char *);
typedef int32_t (*CountFunction)(void *, size_t *);
typedef int32_t (*RunFunction)(void *, AtenTensorHandle *, size_t, AtenTensorHandle *, size_t, void *, void *);
typedef int32_t (*EmptyStridedFunction)(int64_t, const int64_t *, const int64_t *, int32_t, int32_t, int32_t,
                                        AtenTensorHandle *);
typedef int32_t (*DataPointerFunction)(AtenTensorHandle, void **);
typedef int32_t (*SizesFunction)(AtenTensorHandle, int64_t **);
typedef int32_t (*ConstantFunction)(void);

int fail(const char *step, long code) {
  std::printf("failed: %s (%ld)\n", step, code);
  std::fflush(stdout);
  return 11;
}

int load_each(int count, char **paths) {
  int failed = 0;
  for (int i = 0; i < count; i++) {
    void *library = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      std::printf("dlopen failed: %s\n", dlerror());
      failed = 1;
    } else {
      std::printf("loaded: %s\n", paths[i]);
    }
    std::fflush(stdout);
  }
  return failed ? 10 : 0;
}

// The runtime's own start and registry: the backend registered itself at static initialization (why
// consumers link its archive whole); a host that lost it cannot run a CUDA-delegated program.
int check_registry() {
#ifdef SMOKE_HAS_RUNTIME
  executorch::runtime::runtime_init();
  executorch::runtime::BackendInterface *backend = executorch::runtime::get_backend_class("CudaBackend");
  if (backend == nullptr) return fail("the runtime's registry has no CudaBackend", 0);
  std::printf("registered: CudaBackend (is_available: %s)\n", backend->is_available() ? "yes" : "no");
#else
  std::printf("registered: not checked (the tree has no executorch/runtime/backend/interface.h)\n");
#endif
  std::fflush(stdout);
  return 0;
}

template <typename Function>
Function shim(const char *name) {
  return reinterpret_cast<Function>(dlsym(RTLD_DEFAULT, name));
}

int run_wrapper(char **argv) {
  int registry = check_registry();
  if (registry != 0) return registry;
  void *wrapper = dlopen(argv[0], RTLD_NOW | RTLD_LOCAL);
  if (wrapper == nullptr) {
    std::printf("dlopen failed: %s\n", dlerror());
    return 10;
  }
  std::printf("loaded: %s\n", argv[0]);
  std::fflush(stdout);
  auto create = reinterpret_cast<CreateFunction>(dlsym(wrapper, "AOTInductorModelContainerCreateWithDevice"));
  auto outputs_count = reinterpret_cast<CountFunction>(dlsym(wrapper, "AOTInductorModelContainerGetNumOutputs"));
  auto run = reinterpret_cast<RunFunction>(dlsym(wrapper, "AOTInductorModelContainerRun"));
  if (create == nullptr || outputs_count == nullptr || run == nullptr) {
    return fail("the wrapper lacks the model container entry points", 0);
  }
  auto empty_strided = shim<EmptyStridedFunction>("aoti_torch_empty_strided");
  auto data_pointer = shim<DataPointerFunction>("aoti_torch_get_data_ptr");
  auto get_sizes = shim<SizesFunction>("aoti_torch_get_sizes");
  auto float32 = shim<ConstantFunction>("aoti_torch_dtype_float32");
  auto cuda = shim<ConstantFunction>("aoti_torch_device_type_cuda");
  if (!empty_strided || !data_pointer || !get_sizes || !float32 || !cuda) {
    return fail("a shim the host calls is not in the process (aoti_torch_empty_strided, ..._get_data_ptr, "
                "..._get_sizes, ..._dtype_float32, ..._device_type_cuda)", 0);
  }
  void *container = nullptr;
  int32_t error = create(&container, 1, "cuda", nullptr);
  if (error != 0) return fail("AOTInductorModelContainerCreateWithDevice", error);

  const int64_t sizes[2] = {std::atoll(argv[2]), std::atoll(argv[3])};
  const int64_t strides[2] = {sizes[1], 1};
  const size_t count = static_cast<size_t>(sizes[0] * sizes[1]);
  std::vector<float> host(count);
  FILE *input = std::fopen(argv[1], "rb");
  if (input == nullptr || std::fread(host.data(), sizeof(float), count, input) != count) {
    return fail("reading the input", 0);
  }
  std::fclose(input);
  AtenTensorHandle input_tensor = nullptr;
  error = empty_strided(2, sizes, strides, float32(), cuda(), 0, &input_tensor);
  if (error != 0) return fail("aoti_torch_empty_strided", error);
  void *device_input = nullptr;
  data_pointer(input_tensor, &device_input);
  if (cudaMemcpy(device_input, host.data(), count * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) {
    return fail("cudaMemcpy to the device", 0);
  }
  size_t output_count = 0;
  outputs_count(container, &output_count);
  if (output_count < 1) return fail("the model has no output", 0);
  std::vector<AtenTensorHandle> outputs(output_count, nullptr);
  // CudaBackend::execute runs the container on a stream of its own; the shims refuse a null one
  // (aoti_torch_create_cuda_stream_guard: "stream is null"), so the host makes one the same way.
  cudaStream_t stream = nullptr;
  if (cudaStreamCreate(&stream) != cudaSuccess) return fail("cudaStreamCreate", 0);
  error = run(container, &input_tensor, 1, outputs.data(), output_count, reinterpret_cast<void *>(stream), nullptr);
  if (error != 0) return fail("AOTInductorModelContainerRun", error);
  if (cudaStreamSynchronize(stream) != cudaSuccess) return fail("cudaStreamSynchronize", 0);
  cudaStreamDestroy(stream);

  int64_t *output_sizes = nullptr;
  get_sizes(outputs[0], &output_sizes);
  const size_t output_values = static_cast<size_t>(output_sizes[0] * output_sizes[1]);
  std::vector<float> result(output_values);
  void *device_output = nullptr;
  data_pointer(outputs[0], &device_output);
  if (cudaMemcpy(result.data(), device_output, output_values * sizeof(float), cudaMemcpyDeviceToHost) !=
      cudaSuccess) {
    return fail("cudaMemcpy from the device", 0);
  }
  FILE *output = std::fopen(argv[4], "wb");
  if (output == nullptr) return fail("opening the output", 0);
  std::fwrite(result.data(), sizeof(float), output_values, output);
  std::fclose(output);
  std::printf("ran: %zu values\n", output_values);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc == 7 && std::strcmp(argv[1], "--run") == 0) return run_wrapper(argv + 2);
  if (argc < 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: %s LIBRARY... | --run WRAPPER.so INPUT.bin ROWS COLS OUTPUT.bin\n", argv[0]);
    return 2;
  }
  return load_each(argc - 1, argv + 1);
}
