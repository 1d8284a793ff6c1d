/* The host-stage loader: a host program linked against the shim archive under test (ExecuTorch's, in
 * real use) with --whole-archive and --export-dynamic, which dlopens libraries the way ExecuTorch's CUDA
 * backend loads an AOTInductor wrapper: dlopen(RTLD_NOW | RTLD_LOCAL). RTLD_NOW resolves every undefined
 * symbol at once, so a library that loads here found each one in this program's dynamic symbol table
 * (or in its own dependencies), and one that does not is named by the loader's exact message.
 *
 * Usage: load_canary LIBRARY...
 * Prints one line per library, in order: "loaded: LIBRARY" or "dlopen failed: <dlerror()>".
 * Exit: 0 every library loaded, 2 usage, 10 at least one failed. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s LIBRARY...\n", argv[0]);
    return 2;
  }
  int failed = 0;
  for (int i = 1; i < argc; i++) {
    /* Never closed: the process exits right after, and unloading proves nothing. */
    void *library = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
      printf("dlopen failed: %s\n", dlerror());
      failed = 1;
    } else {
      printf("loaded: %s\n", argv[i]);
    }
    /* Flushed per line so the record survives a crash in a later library's initialisers. */
    fflush(stdout);
  }
  return failed ? 10 : 0;
}
