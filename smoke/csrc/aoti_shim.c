/* Stands in for the AOTI shim library that ExecuTorch's CUDA backend links statically into its host:
 * C-ABI functions that an AOTInductor wrapper library resolves from the host process at dlopen time.
 * Nothing in the host calls them, which is why the static linker drops this member unless
 * --whole-archive keeps it, and why the dynamic symbol table lacks them without --export-dynamic. */
#include <stdint.h>

/* Values follow c10::ScalarType and c10::DeviceType, as the real shims return them. */
int32_t aoti_torch_dtype_float32(void) { return 6; }
int32_t aoti_torch_dtype_int64(void) { return 4; }
int32_t aoti_torch_device_type_cuda(void) { return 1; }
