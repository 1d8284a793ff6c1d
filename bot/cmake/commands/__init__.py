"""The commands the model evaluates, one module per family, and the one map from name to handler.

A handler is a plain function `(evaluation, command, frame) -> None`; it expands its own
arguments and records what it learns on the evaluation. A command not in `HANDLERS` (and not
a user function or macro) does nothing: the model ignores what it does not model rather than
guess. Block commands (if, foreach, while, function, macro, block) are not here: the loop in
bot/cmake/interpreter.py hands them to bot/cmake/control_flow.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from bot.cmake.commands import (
    directories,
    files,
    install,
    lists_and_strings,
    processes,
    properties,
    targets,
    usage,
    variables,
)
from bot.cmake.state import Frame
from bot.cmake.syntax import Command

if TYPE_CHECKING:
    from bot.cmake.interpreter import Evaluation

Handler = Callable[["Evaluation", Command, Frame], None]


def _ignore(evaluation: Evaluation, command: Command, frame: Frame) -> None:
    """A command whose effect the model has no use for."""


HANDLERS: Mapping[str, Handler] = MappingProxyType(
    {
        # variables and options
        "set": variables.set_variable,
        "unset": variables.unset_variable,
        "option": variables.define_option,
        "cmake_dependent_option": variables.define_dependent_option,
        "math": variables.evaluate_math,
        "cmake_parse_arguments": variables.parse_arguments,
        "list": lists_and_strings.edit_list,
        "string": lists_and_strings.edit_string,
        # paths and files
        "file": files.run_file_command,
        "get_filename_component": files.get_filename_component,
        "cmake_path": files.cmake_path,
        # files and directories
        "include": directories.include,
        "include_guard": _ignore,  # include() reads it before running the file
        "add_subdirectory": directories.add_subdirectory,
        "project": directories.set_project,
        "message": directories.report_message,
        "execute_process": processes.execute_process,
        # targets
        "add_library": targets.add_library,
        "add_executable": targets.add_executable,
        "add_custom_target": targets.add_custom_target,
        "target_sources": targets.add_target_sources,
        # usage requirements
        "target_link_libraries": usage.target_usage("link_libraries"),
        "target_link_options": usage.target_usage("link_options"),
        "target_compile_definitions": usage.target_usage("compile_definitions"),
        "target_compile_options": usage.target_usage("compile_options"),
        "target_include_directories": usage.target_usage("include_directories"),
        "add_definitions": usage.directory_usage("compile_definitions"),
        "add_compile_definitions": usage.directory_usage("compile_definitions"),
        "add_compile_options": usage.directory_usage("compile_options"),
        "include_directories": usage.directory_usage("include_directories"),
        "link_libraries": usage.directory_usage("link_libraries"),
        # properties
        "set_target_properties": properties.set_target_properties,
        "set_property": properties.set_property,
        "get_target_property": properties.get_target_property,
        "get_property": properties.get_property,
        # install
        "install": install.install,
    }
)
