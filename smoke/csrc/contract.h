/* The seam between the shim-calling C code and the kernel object of the link-contract library.
 * C linkage on both sides, so a gcc object and an nvcc object link into one shared library, and so
 * the kernel object can be swapped for a CPU stand-in where nvcc is missing. */
#ifndef SMOKE_CONTRACT_H
#define SMOKE_CONTRACT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Doubles value on the device into *result; returns 0, or nonzero with a message in error. */
int smoke_double_on_device(int32_t value, int32_t *result, char *error, size_t error_size);

/* The library's entry point: 0 the kernel returned the expected value, 1 a wrong value,
 * 2 the device failed. A one-line explanation goes to message either way. */
int smoke_contract_run(char *message, size_t message_size);

#ifdef __cplusplus
}
#endif

#endif
