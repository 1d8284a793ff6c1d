// The host under test: an executable that links ExecuTorch's CUDA backend the way a static runner does
// (target_link_libraries(host PRIVATE aoti_cuda_backend), so the backend's own usage requirements decide
// --whole-archive and --export-dynamic), then dlopens libraries with RTLD_NOW | RTLD_LOCAL as the
// backend loads an AOTInductor wrapper. A library loads only if every symbol it needs is in this
// process's dynamic symbol table: the shims the pull request compiled, not a stand-in.
//
// Usage: smoke_backend_host LIBRARY...
// Prints "loaded: LIBRARY" or "dlopen failed: <dlerror()>" per library; exit 0 all loaded, 10 otherwise.
#include <dlfcn.h>
#include <cstdio>

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s LIBRARY...\n", argv[0]);
    return 2;
  }
  int failed = 0;
  for (int i = 1; i < argc; i++) {
    void *library = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      std::printf("dlopen failed: %s\n", dlerror());
      failed = 1;
    } else {
      std::printf("loaded: %s\n", argv[i]);
    }
    std::fflush(stdout);
  }
  return failed ? 10 : 0;
}
