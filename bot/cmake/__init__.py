"""CMake under a profile: the targets a configuration would create, without running CMake.

ExecuTorch's CMake cannot be configured here (it needs torch, the CUDA toolkit, submodules), so
the model evaluates the repository's CMake files in order under a profile (platform,
compiler, whether a CUDA compiler was found, option values) and keeps, per target, what a
review needs: sources with the `if` conditions they were added under, usage requirements with
their PUBLIC/PRIVATE/INTERFACE scope, whole-archive link pairs, and where each came from.

What it does not model is ignored rather than guessed: unknown commands do nothing,
`find_package` finds nothing, `execute_process` succeeds with empty output, unknown generator
expressions stay verbatim. Syntax errors, runaway loops and `message(FATAL_ERROR)` become
`ParseProblem` values in the model; evaluation never raises. Budgets that run out (steps,
value size, regular-expression time) are also listed in `CMakeModel.limits`.

Where things are:
  syntax.py                 tree-sitter-cmake parse -> flat command list
  edits.py                  span edits for fixes: a call's arguments, moving items between scopes
  blocks.py                 block structure of a file (if/endif, function/endfunction, ...)
  interpreter.py            Evaluation: files, directories, the command loop, expansion
  control_flow.py           if, foreach, while, block, function and macro calls
  conditions.py             if() condition evaluation
  commands/                 one module per command family, HANDLERS maps names to them
  generator_expressions.py  $<...>
  values.py                 ${} references, lists, truth of constants
  whole_archive.py          which libraries a link line takes whole
  state.py                  scopes, frames, targets under construction
  model.py                  the frozen result: CMakeModel, CMakeTarget, Scoped, ...
  profiles.py               the profiles as data, and those a repository defines
  budgets.py, regexes.py    the limits an evaluation runs under
"""
