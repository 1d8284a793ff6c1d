/* The host of the link contract: loads a library the way ExecuTorch's CUDA backend loads an
 * AOTInductor wrapper, dlopen(RTLD_NOW | RTLD_LOCAL), then calls its entry point.
 *
 * Usage: load_library [--load-only] LIBRARY
 * Prints one line the runner parses ("dlopen failed: <dlerror()>", "loaded", "ran: ...").
 * Exit: 0 ran as expected (or loaded, with --load-only), 2 usage, 10 dlopen failed,
 *       11 no entry point, 12 wrong result, 13 device error. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int (*contract_entry)(char *message, size_t message_size);

int main(int argc, char **argv) {
  int load_only = argc == 3 && strcmp(argv[1], "--load-only") == 0;
  if (argc != 2 + load_only) {
    fprintf(stderr, "usage: %s [--load-only] LIBRARY\n", argv[0]);
    return 2;
  }
  void *library = dlopen(argv[argc - 1], RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    printf("dlopen failed: %s\n", dlerror());
    return 10;
  }
  printf("loaded\n");
  /* Flushed now so the load is on record even if the kernel call crashes the process. */
  fflush(stdout);
  if (load_only) {
    return 0;
  }
  contract_entry entry;
  *(void **)&entry = dlsym(library, "smoke_contract_run");
  if (entry == NULL) {
    printf("dlsym failed: %s\n", dlerror());
    return 11;
  }
  char message[512] = "";
  int status = entry(message, sizeof message);
  printf("%s: %s\n", status == 0 ? "ran" : status == 1 ? "wrong result" : "device error", message);
  return status == 0 ? 0 : status == 1 ? 12 : 13;
}
