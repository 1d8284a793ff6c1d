// The device half of the link-contract library: the shim's result crosses into a real kernel launch,
// so a passing run shows the loaded library, the shim and the GPU all working together.
#include <cstdio>

#include "contract.h"

__global__ void double_value(int32_t value, int32_t *out) { *out = value * 2; }

extern "C" int smoke_double_on_device(int32_t value, int32_t *result, char *error, size_t error_size) {
  int32_t *device_result = nullptr;
  cudaError_t status = cudaMalloc(&device_result, sizeof *device_result);
  if (status == cudaSuccess) {
    double_value<<<1, 1>>>(value, device_result);
    status = cudaGetLastError();
  }
  if (status == cudaSuccess) {
    status = cudaMemcpy(result, device_result, sizeof *result, cudaMemcpyDeviceToHost);
  }
  if (device_result != nullptr) {
    cudaFree(device_result);
  }
  if (status != cudaSuccess) {
    snprintf(error, error_size, "%s: %s", cudaGetErrorName(status), cudaGetErrorString(status));
    return static_cast<int>(status);
  }
  return 0;
}
