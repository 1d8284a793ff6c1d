"""A translation unit the change touches no longer compiles in some configuration.

The compiled tier asks the real compiler instead of predicting: each C/C++ source the pull request
changes, and each source including a header it changes, is compiled (`-fsyntax-only`) in every
configuration the model knows: each target platform of each Buck cell (xplat's CPU-only Android,
Apple and Linux, and Linux with CUDA; fbcode; open-source Buck) and each CMake profile. Each
compile gets exactly what that configuration gives the target: the headers of the target and of
its exported-dep closure (a private dep of a dep is invisible, as in buck2), the preprocessor flags
of the target and the exported ones of its deps, the platform's predefined macros (`__ANDROID__`,
`__APPLE__`: simulated on the host compiler, which the message says), and the CUDA toolkit's
headers only where the configuration has CUDA. A failure at head that the same compile did not
have at base is the pull request's; the message is the compiler's first error, with its file and
line, the configurations it shows in, and a command to reproduce it. A header the tree does not
hold (a submodule, a generated header, a system SDK) makes the compile "not verified", never a
finding (`compile-not-verified` lists those).

A blocker where a cell or profile builds the configuration; major where it is derived.

Example (bad): a CUDA runtime call outside the `#ifdef` that includes its header, in a source a
CPU-only platform compiles:
```cpp
#ifdef USE_CUDA
#include <cuda_runtime.h>
#endif
void sync() { cudaDeviceSynchronize(); }   // error: 'cudaDeviceSynchronize' was not declared
```

Use instead: keep the call under the same condition as its header:
```cpp
void sync() {
#ifdef USE_CUDA
  cudaDeviceSynchronize();
#endif
}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from bot.check import BUCK_FILES, CMAKE_FILES, CPP_FILES, Check, Example
from bot.facts.compiled import CompileFailure, compiled_review
from bot.model import Evidence, Hit, Severity
from bot.snapshot import Snapshot


def run(snap: Snapshot, options: object) -> Iterator[Hit]:
    review = compiled_review(snap)
    for failure in review.failures:
        yield _hit(snap, failure, review.compiler)


def _hit(snap: Snapshot, failure: CompileFailure, compiler: str) -> Hit:
    first = failure.configurations[0]
    in_tree = snap.head.tree.exists(failure.path)
    path, line = (failure.path, failure.line) if in_tree else (failure.source, 1)
    configurations = ", ".join(f"`{c.name}`" for c in failure.configurations)
    macros = failure.simulated
    note = (
        f" The platform's predefined {', '.join(f'`{m}`' for m in macros)} "
        f"{'is' if len(macros) == 1 else 'are'} simulated on the host compiler."
        if macros
        else ""
    )
    since = (
        "did not exist at base (a new source, or a target new in this configuration)"
        if failure.new_source
        else "succeeded at base"
    )
    if failure.hidden_header is None:
        reproduce = f"Reproduce in the directory holding the `executorch` checkout: `{failure.command}`"
    else:
        build = (
            f"`buck2 build /{failure.owner}`"
            if first.cell == "oss"
            else f"the `{first.cell}` build of `{failure.owner}`"
        )
        reproduce = (
            f"The tree holds `{failure.hidden_header}`, but no dep of `{failure.owner}` gives it there (a compile over "
            f"the whole checkout would find it): reproduce with {build}."
        )
    built = any(c.built for c in failure.configurations)
    return Hit(
        path=path,
        line=line,
        message=(
            f"`{compiler.rsplit('/', 1)[-1]}` fails to compile `{failure.source}` (built by `{failure.owner}`) in "
            f"{configurations}: `{failure.path}:{failure.line}: error: {failure.text}`. The same compile "
            f"{since}.{note} {reproduce}"
        ),
        key=f"{failure.source}|{failure.owner}|{failure.text}",
        target=failure.owner if first.cell else None,
        cell=first.cell,
        offending_text=failure.text,
        evidence=(Evidence(failure.source, 1, f"the translation unit, compiled for {first.name}"),),
        at_most=None if built else Severity.MAJOR,
    )


_CUDA_CALL_OUTSIDE = (
    "#ifdef USE_CUDA\n#include <cuda_runtime.h>\n#endif\n"
    "void sync() { cudaDeviceSynchronize(); }  // expect: compile-error-new\n"
)
_CUDA_CALL_INSIDE = (
    "#ifdef USE_CUDA\n#include <cuda_runtime.h>\n#endif\nvoid sync() {\n#ifdef USE_CUDA\n"
    "  cudaDeviceSynchronize();\n#endif\n}\n"
)
_BUCK = (
    'cxx_library(name = "sync", srcs = ["sync.cpp"], visibility = ["PUBLIC"],\n'
    '    preprocessor_flags = select({"ovr_config//cuda:has_cuda": ["-DUSE_CUDA"], "DEFAULT": []}))\n'
)
_BASE = {"runtime/BUCK": _BUCK, "runtime/sync.cpp": "void sync() {}\n"}

CHECK = Check(
    id="compile-error-new",
    severity=Severity.BLOCKER,
    title="A translation unit no longer compiles in some configuration",
    doc=__doc__,
    run=run,
    bad=(Example(base=_BASE, head={**_BASE, "runtime/sync.cpp": _CUDA_CALL_OUTSIDE}),),
    good=(Example(base=_BASE, head={**_BASE, "runtime/sync.cpp": _CUDA_CALL_INSIDE}),),
    inputs=(*CPP_FILES, *BUCK_FILES, *CMAKE_FILES),
)
