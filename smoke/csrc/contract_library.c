/* The host-code half of the link-contract library, playing an AOTInductor wrapper: it calls a shim
 * function it does not define, so dlopen(RTLD_NOW) succeeds only if the loading process exports it. */
#include <stdio.h>

#include "contract.h"

extern int32_t aoti_torch_dtype_float32(void);

int smoke_contract_run(char *message, size_t message_size) {
  int32_t dtype = aoti_torch_dtype_float32();
  int32_t doubled = 0;
  if (smoke_double_on_device(dtype, &doubled, message, message_size) != 0) {
    return 2;
  }
  snprintf(message, message_size, "kernel returned %d for aoti_torch_dtype_float32() = %d (expected %d)",
           (int)doubled, (int)dtype, (int)(dtype * 2));
  return doubled == dtype * 2 ? 0 : 1;
}
