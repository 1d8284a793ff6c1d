// The runtime host: an executable that runs an exported program (.pte + .ptd) through the pull request's
// own runtime, as a static runner does: Program::load over a FileDataLoader, the .ptd as a
// FlatTensorDataMap, Method loading (which calls CudaBackend::init, where the backend writes the
// AOTInductor wrapper out of the data map and loads it), set_input, execute (CudaBackend::execute).
// It links aoti_cuda_backend (whole, through the backend's own usage requirements), the data loader and
// flat tensor extensions, and the core runtime, all compiled from the pull request's tree.
//
// Usage:
//   smoke_runtime_host MODEL.pte DATA.ptd INPUT.bin ROWS COLS OUTPUT.bin
// One float32 input of ROWS x COLS (raw, row-major) is handed over in host memory, not planned
// (MemoryPlanningPass(alloc_graph_input=False), as the backend's own tests export): the exporter puts
// et_copy::_h2d_copy.out / _d2h_copy.out at the delegate's edges, whose kernels are the tree's own
// (kernels/portable/cpu/op__device_copy.cpp, compiled into this host and registered below by hand, as
// the kernel codegen the smoke build does not run would register them). The first output is written
// as raw float32. Prints "registered: ...", "program: ...", "method: ...",
// "ran: N values" (exit 0), or "failed: STEP (error 0xNN)" (exit 11).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <executorch/extension/data_loader/file_data_loader.h>
#include <executorch/extension/flat_tensor/flat_tensor_data_map.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/device_memory_buffer.h>
#include <executorch/runtime/core/hierarchical_allocator.h>
#include <executorch/runtime/core/memory_allocator.h>
#include <executorch/runtime/executor/memory_manager.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/kernel/kernel_runtime_context.h>
#include <executorch/runtime/kernel/operator_registry.h>
#include <executorch/runtime/platform/runtime.h>

namespace torch {
namespace executor {
namespace native {
// kernels/portable/cpu/op__device_copy.cpp (the portable, non-ATen build).
Tensor &_h2d_copy_out(KernelRuntimeContext &context, const Tensor &self, Tensor &out);
Tensor &_d2h_copy_out(KernelRuntimeContext &context, const Tensor &self, Tensor &out);
}  // namespace native
}  // namespace executor
}  // namespace torch

namespace {

namespace et = ::executorch::runtime;
using ::executorch::extension::FileDataLoader;
using ::executorch::extension::FlatTensorDataMap;

int fail(const char *step, et::Error error) {
  std::printf("failed: %s (error 0x%x)\n", step, static_cast<unsigned>(error));
  std::fflush(stdout);
  return 11;
}

int fail_cuda(const char *step, cudaError_t error) {
  std::printf("failed: %s (%s)\n", step, cudaGetErrorString(error));
  std::fflush(stdout);
  return 11;
}

// The boxed calls the kernel codegen writes for `func(Tensor self, *, Tensor(a!) out) -> Tensor(a!)`:
// the stack holds self, then out.
void h2d_copy(et::KernelRuntimeContext &context, et::Span<et::EValue *> stack) {
  torch::executor::native::_h2d_copy_out(context, stack[0]->toTensor(), stack[1]->toTensor());
}

void d2h_copy(et::KernelRuntimeContext &context, et::Span<et::EValue *> stack) {
  torch::executor::native::_d2h_copy_out(context, stack[0]->toTensor(), stack[1]->toTensor());
}

const et::Kernel kDeviceCopyKernels[] = {
    et::Kernel("et_copy::_h2d_copy.out", h2d_copy),
    et::Kernel("et_copy::_d2h_copy.out", d2h_copy),
};

bool read_floats(const char *path, std::vector<float> &values) {
  FILE *file = std::fopen(path, "rb");
  if (file == nullptr) return false;
  size_t got = std::fread(values.data(), sizeof(float), values.size(), file);
  std::fclose(file);
  return got == values.size();
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s MODEL.pte DATA.ptd INPUT.bin ROWS COLS OUTPUT.bin\n", argv[0]);
    return 2;
  }
  et::runtime_init();
  et::Error registered = et::register_kernels(et::Span<const et::Kernel>(kDeviceCopyKernels, 2));
  if (registered != et::Error::Ok) return fail("register the device copy kernels", registered);
  et::BackendInterface *backend = et::get_backend_class("CudaBackend");
  std::printf("registered: CudaBackend (is_available: %s)\n",
              backend == nullptr ? "not registered" : (backend->is_available() ? "yes" : "no"));

  auto program_loader = FileDataLoader::from(argv[1]);
  if (!program_loader.ok()) return fail("open the .pte", program_loader.error());
  auto program = et::Program::load(&program_loader.get(), et::Program::Verification::InternalConsistency);
  if (!program.ok()) return fail("Program::load", program.error());
  auto data_loader = FileDataLoader::from(argv[2]);
  if (!data_loader.ok()) return fail("open the .ptd", data_loader.error());
  auto data_map = FlatTensorDataMap::load(&data_loader.get());
  if (!data_map.ok()) return fail("FlatTensorDataMap::load", data_map.error());

  const char *method_name = "forward";
  auto meta = program->method_meta(method_name);
  if (!meta.ok()) return fail("method_meta", meta.error());
  std::printf("program: %zu method(s); forward has %zu input(s), %zu output(s), %zu planned buffer(s)\n",
              program->num_methods(), meta->num_inputs(), meta->num_outputs(), meta->num_memory_planned_buffers());

  // Planned memory as the runtime's Module plans it: host buffers for CPU, a DeviceMemoryBuffer from the
  // registered device allocator (the backend's) for a buffer the program places on a device.
  std::vector<std::vector<uint8_t>> host_buffers;
  std::vector<et::DeviceMemoryBuffer> device_buffers;
  std::vector<et::Span<uint8_t>> spans;
  std::vector<et::etensor::Device> devices;
  size_t buffers = meta->num_memory_planned_buffers();
  host_buffers.reserve(buffers);
  device_buffers.reserve(buffers);
  for (size_t i = 0; i < buffers; i++) {
    auto size = meta->memory_planned_buffer_size(i);
    auto device = meta->memory_planned_buffer_device(i);
    if (!size.ok()) return fail("memory_planned_buffer_size", size.error());
    if (!device.ok()) return fail("memory_planned_buffer_device", device.error());
    devices.push_back(device.get());
    if (device->is_cpu()) {
      host_buffers.emplace_back(static_cast<size_t>(size.get()));
      spans.emplace_back(host_buffers.back().data(), host_buffers.back().size());
    } else {
      auto buffer = et::DeviceMemoryBuffer::create(static_cast<size_t>(size.get()), device->type(), device->index());
      if (!buffer.ok()) return fail("DeviceMemoryBuffer::create (no device allocator registered?)", buffer.error());
      device_buffers.push_back(std::move(buffer.get()));
      spans.push_back(device_buffers.back().as_span());
    }
  }
  std::printf("planned: %zu host and %zu device buffer(s)\n", host_buffers.size(), device_buffers.size());
  et::HierarchicalAllocator planned(et::Span<et::Span<uint8_t>>(spans.data(), spans.size()),
                                    et::Span<const et::etensor::Device>(devices.data(), devices.size()));
  std::vector<uint8_t> method_pool(16 << 20), temp_pool(16 << 20);
  et::MemoryAllocator method_allocator(static_cast<uint32_t>(method_pool.size()), method_pool.data());
  et::MemoryAllocator temp_allocator(static_cast<uint32_t>(temp_pool.size()), temp_pool.data());
  et::MemoryManager memory(&method_allocator, &planned, &temp_allocator);

  // Loading the method runs CudaBackend::init for its delegate.
  auto method = program->load_method(method_name, &memory, nullptr, &data_map.get());
  if (!method.ok()) return fail("Program::load_method (CudaBackend::init)", method.error());
  std::printf("method: forward loaded\n");

  long rows = std::atol(argv[4]), columns = std::atol(argv[5]);
  std::vector<float> input(static_cast<size_t>(rows * columns));
  if (!read_floats(argv[3], input)) {
    std::printf("failed: read the input (%s)\n", argv[3]);
    return 11;
  }
  et::etensor::TensorImpl::SizesType sizes[2] = {static_cast<int32_t>(rows), static_cast<int32_t>(columns)};
  et::etensor::TensorImpl::DimOrderType dim_order[2] = {0, 1};
  et::etensor::TensorImpl::StridesType strides[2] = {static_cast<int32_t>(columns), 1};
  et::etensor::TensorImpl impl(et::etensor::ScalarType::Float, 2, sizes, input.data(), dim_order, strides);
  et::Error error = method->set_input(et::EValue(et::etensor::Tensor(&impl)), 0);
  if (error != et::Error::Ok) return fail("Method::set_input", error);

  error = method->execute();  // CudaBackend::execute
  if (error != et::Error::Ok) return fail("Method::execute (CudaBackend::execute)", error);
  cudaError_t status = cudaDeviceSynchronize();
  if (status != cudaSuccess) return fail_cuda("cudaDeviceSynchronize", status);

  const et::EValue &output = method->get_output(0);
  if (!output.isTensor()) {
    std::printf("failed: output 0 is not a tensor\n");
    return 11;
  }
  const et::etensor::Tensor tensor = output.toTensor();
  if (tensor.scalar_type() != et::etensor::ScalarType::Float) {
    std::printf("failed: output 0 is not float32 (scalar type %d)\n", static_cast<int>(tensor.scalar_type()));
    return 11;
  }
  std::vector<float> values(static_cast<size_t>(tensor.numel()));
  cudaPointerAttributes attributes{};
  bool on_device = cudaPointerGetAttributes(&attributes, tensor.const_data_ptr()) == cudaSuccess &&
                   (attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged);
  cudaGetLastError();  // a host pointer leaves no error behind to report later
  if (on_device) {
    status = cudaMemcpy(values.data(), tensor.const_data_ptr(), tensor.nbytes(), cudaMemcpyDeviceToHost);
    if (status != cudaSuccess) return fail_cuda("cudaMemcpy from the device", status);
  } else {
    std::memcpy(values.data(), tensor.const_data_ptr(), tensor.nbytes());
  }
  FILE *file = std::fopen(argv[6], "wb");
  if (file == nullptr || std::fwrite(values.data(), sizeof(float), values.size(), file) != values.size()) {
    std::printf("failed: write the output (%s)\n", argv[6]);
    return 11;
  }
  std::fclose(file);
  std::printf("ran: %zu values (output on the %s)\n", values.size(), on_device ? "device" : "host");
  std::fflush(stdout);
  return 0;
}
