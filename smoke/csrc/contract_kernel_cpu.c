/* CPU stand-in for contract_kernel.cu, built only where nvcc is missing: the dlopen contract (which
 * symbols resolve) does not depend on the kernel, so it can still be proven with gcc alone. */
#include "contract.h"

int smoke_double_on_device(int32_t value, int32_t *result, char *error, size_t error_size) {
  (void)error;
  (void)error_size;
  *result = value * 2;
  return 0;
}
