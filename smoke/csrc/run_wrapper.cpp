// Runs an AOTInductor wrapper built without libtorch through the shims the pull request compiled.
//
// This program links libaoti_cuda_shims.so (the build's own), so when it dlopens the wrapper with
// RTLD_NOW | RTLD_LOCAL every aoti_torch_* the wrapper needs must resolve from that library: the way
// ExecuTorch's CUDA backend loads a wrapper. It then drives the wrapper's model container as the
// backend does (AOTInductorModelContainerCreateWithDevice, ...Run), on one float32 input read from a file,
// and writes the first output as raw float32 for the caller to compare with eager PyTorch.
//
// Usage: run_wrapper WRAPPER.so INPUT.bin ROWS COLS OUTPUT.bin
// Prints "loaded: ...", then "ran: N values" (exit 0); or "dlopen failed: ..." (exit 10), or
// "failed: <step> ..." (exit 11).
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

extern "C" {
struct AtenTensorOpaque;
typedef AtenTensorOpaque *AtenTensorHandle;
// Declared as the shims define them; resolved from the pull request's libaoti_cuda_shims.so.
int32_t aoti_torch_empty_strided(int64_t ndim, const int64_t *sizes, const int64_t *strides, int32_t dtype,
                                 int32_t device_type, int32_t device_index, AtenTensorHandle *ret);
int32_t aoti_torch_get_data_ptr(AtenTensorHandle tensor, void **ret);
int32_t aoti_torch_get_sizes(AtenTensorHandle tensor, int64_t **ret);
int32_t aoti_torch_dtype_float32(void);
int32_t aoti_torch_device_type_cuda(void);
}

typedef int32_t (*CreateFunction)(void **, size_t, const char *, const char *);
typedef int32_t (*CountFunction)(void *, size_t *);
typedef int32_t (*RunFunction)(void *, AtenTensorHandle *, size_t, AtenTensorHandle *, size_t, void *, void *);

static int fail(const char *step, long code) {
  std::printf("failed: %s (%ld)\n", step, code);
  std::fflush(stdout);
  return 11;
}

int main(int argc, char **argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s WRAPPER.so INPUT.bin ROWS COLS OUTPUT.bin\n", argv[0]);
    return 2;
  }
  void *wrapper = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (wrapper == nullptr) {
    std::printf("dlopen failed: %s\n", dlerror());
    return 10;
  }
  std::printf("loaded: %s\n", argv[1]);
  std::fflush(stdout);
  auto create = reinterpret_cast<CreateFunction>(dlsym(wrapper, "AOTInductorModelContainerCreateWithDevice"));
  auto outputs_count = reinterpret_cast<CountFunction>(dlsym(wrapper, "AOTInductorModelContainerGetNumOutputs"));
  auto run = reinterpret_cast<RunFunction>(dlsym(wrapper, "AOTInductorModelContainerRun"));
  if (create == nullptr || outputs_count == nullptr || run == nullptr) {
    return fail("the wrapper lacks the model container entry points", 0);
  }
  void *container = nullptr;
  int32_t error = create(&container, 1, "cuda", nullptr);
  if (error != 0) return fail("AOTInductorModelContainerCreateWithDevice", error);

  const int64_t sizes[2] = {std::atoll(argv[3]), std::atoll(argv[4])};
  const int64_t strides[2] = {sizes[1], 1};
  const size_t count = static_cast<size_t>(sizes[0] * sizes[1]);
  std::vector<float> host(count);
  FILE *input = std::fopen(argv[2], "rb");
  if (input == nullptr || std::fread(host.data(), sizeof(float), count, input) != count) {
    return fail("reading the input", 0);
  }
  std::fclose(input);
  AtenTensorHandle input_tensor = nullptr;
  error = aoti_torch_empty_strided(2, sizes, strides, aoti_torch_dtype_float32(), aoti_torch_device_type_cuda(),
                                   0, &input_tensor);
  if (error != 0) return fail("aoti_torch_empty_strided", error);
  void *device_input = nullptr;
  aoti_torch_get_data_ptr(input_tensor, &device_input);
  if (cudaMemcpy(device_input, host.data(), count * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) {
    return fail("cudaMemcpy to the device", 0);
  }
  size_t output_count = 0;
  outputs_count(container, &output_count);
  if (output_count < 1) return fail("the model has no output", 0);
  std::vector<AtenTensorHandle> outputs(output_count, nullptr);
  error = run(container, &input_tensor, 1, outputs.data(), output_count, nullptr, nullptr);
  if (error != 0) return fail("AOTInductorModelContainerRun", error);
  if (cudaDeviceSynchronize() != cudaSuccess) return fail("cudaDeviceSynchronize", 0);

  int64_t *output_sizes = nullptr;
  aoti_torch_get_sizes(outputs[0], &output_sizes);
  const size_t output_values = static_cast<size_t>(output_sizes[0] * output_sizes[1]);
  std::vector<float> result(output_values);
  void *device_output = nullptr;
  aoti_torch_get_data_ptr(outputs[0], &device_output);
  if (cudaMemcpy(result.data(), device_output, output_values * sizeof(float), cudaMemcpyDeviceToHost) !=
      cudaSuccess) {
    return fail("cudaMemcpy from the device", 0);
  }
  FILE *output = std::fopen(argv[5], "wb");
  if (output == nullptr) return fail("opening the output", 0);
  std::fwrite(result.data(), sizeof(float), output_values, output);
  std::fclose(output);
  std::printf("ran: %zu values\n", output_values);
  return 0;
}
